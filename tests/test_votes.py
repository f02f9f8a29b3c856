"""K-vote maths: mode, second mode, frequency, ties, undetermined votes, apportioning."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ragtriage.diagnosis.votes import apportion_votes, summarize_votes
from ragtriage.records import ErrorType, Vote

E = ErrorType


def test_mode_second_and_frequency() -> None:
    votes: list[Vote] = [E.E13] * 6 + [E.E10] * 3 + [E.E16]
    s = summarize_votes(votes)
    assert s.mode is E.E13
    assert s.second is E.E10
    assert s.mode_count == 6 and s.second_count == 3
    assert s.mode_frequency == pytest.approx(0.6)
    assert s.undetermined == 0 and s.k == 10 and s.ties == ()


def test_undetermined_votes_count_against_frequency_but_never_win() -> None:
    votes: list[Vote] = ["undetermined"] * 6 + [E.E4] * 3 + [E.E5]
    s = summarize_votes(votes)
    assert s.mode is E.E4
    assert s.second is E.E5
    assert s.undetermined == 6
    assert s.mode_frequency == pytest.approx(0.3)  # 3 of all 10 votes
    assert "undetermined 6" in s.describe()


def test_tie_broken_by_taxonomy_order_and_recorded() -> None:
    s = summarize_votes([E.E14, E.E13, E.E14, E.E13, E.E10])
    assert s.mode is E.E13  # E13 precedes E14 in the taxonomy
    assert s.second is E.E14
    assert s.ties == (E.E13, E.E14)
    assert "tie between E13, E14" in s.describe()
    # the order in which votes arrive does not matter
    assert summarize_votes([E.E13, E.E14, E.E13, E.E14, E.E10]).mode is E.E13


def test_second_mode_tie_recorded() -> None:
    s = summarize_votes([E.E4] * 4 + [E.E6, E.E5])
    assert s.mode is E.E4 and s.second is E.E5
    assert s.second_ties == (E.E5, E.E6)


def test_all_undetermined_gives_no_mode() -> None:
    s = summarize_votes(["undetermined"] * 10)
    assert s.mode is None and s.second is None and s.mode_frequency is None
    assert s.undetermined == 10
    assert s.describe() == "votes: all 10 undetermined"


def test_single_type_has_no_second_mode() -> None:
    s = summarize_votes([E.E7] * 10)
    assert s.mode is E.E7 and s.second is None and s.mode_frequency == 1.0


def test_votes_given_as_strings_are_normalised() -> None:
    s = summarize_votes(["E3", "E3", "E1"])  # type: ignore[list-item]
    assert s.mode is E.E3 and s.votes == (E.E3, E.E3, E.E1)


def test_apportion_votes_largest_remainder() -> None:
    votes = apportion_votes({E.E13: 0.6, E.E10: 0.3, E.E16: 0.1}, 10)
    assert votes.count(E.E13) == 6 and votes.count(E.E10) == 3 and votes.count(E.E16) == 1
    # remainders: 10 * (2/3, 1/3) -> 6.67, 3.33 -> 7, 3
    votes = apportion_votes({E.E1: 2.0, E.E2: 1.0}, 10)
    assert votes.count(E.E1) == 7 and votes.count(E.E2) == 3
    assert apportion_votes({}, 4) == ["undetermined"] * 4
    assert apportion_votes({E.E1: 0.0}, 3) == ["undetermined"] * 3


@given(
    st.dictionaries(
        st.sampled_from(list(ErrorType)), st.floats(min_value=0.0, max_value=1.0), max_size=6
    ),
    st.integers(min_value=1, max_value=20),
)
def test_apportion_always_k_votes_and_monotone_in_score(
    scores: dict[ErrorType, float], k: int
) -> None:
    votes = apportion_votes(scores, k)
    assert len(votes) == k
    positive = {t: v for t, v in scores.items() if v > 0}
    if not positive:
        assert summarize_votes(votes).mode is None
        return
    assert "undetermined" not in votes
    for a, sa in positive.items():
        for b, sb in positive.items():
            if sa > sb:  # a higher score never gets fewer votes
                assert votes.count(a) >= votes.count(b)


def test_strongest_type_keeps_a_strict_plurality_among_many_weak_ones() -> None:
    # largest remainders alone would give E7 and E8 two votes each (and taxonomy order
    # would then pick E7 although E8 scored higher)
    scores = {
        ErrorType.E8: 0.96,
        ErrorType.E7: 0.75,
        ErrorType.E14: 0.63,
        ErrorType.E9: 0.56,
        ErrorType.E15: 0.34,
        ErrorType.E13: 0.32,
        ErrorType.E16: 0.25,
    }
    votes = apportion_votes(scores, 10)
    assert len(votes) == 10
    summary = summarize_votes(votes)
    assert summary.mode is ErrorType.E8
    counts = {t: votes.count(t) for t in set(votes)}
    assert all(n < counts[ErrorType.E8] for t, n in counts.items() if t is not ErrorType.E8)


def test_equal_top_scores_are_left_to_the_tie_rules() -> None:
    votes = apportion_votes({ErrorType.E4: 0.6, ErrorType.E5: 0.6}, 10)
    assert votes.count(ErrorType.E4) == votes.count(ErrorType.E5) == 5
