"""Language-aware text utilities shared by chunking, retrieval and the rules judge.

English and Chinese are first-class: Latin text is split into words, CJK text into
characters (and character bigrams for matching), so every rule that counts tokens or
overlap works on text with no spaces between words.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass
from functools import lru_cache
from itertools import filterfalse

from ragtriage._regex import lazy_compile

__all__ = [
    "STOPWORDS_EN",
    "STOPWORDS_ZH",
    "FoldedPattern",
    "Sentence",
    "cjk_ratio",
    "content_tokens",
    "count_tokens",
    "detect_language",
    "has_cjk",
    "has_content",
    "is_cjk",
    "match_tokens",
    "nfkc",
    "normalize",
    "split_paragraphs",
    "split_sentences",
    "strip_list_marker",
    "token_f1",
    "token_spans",
    "word_tokens",
]

_CJK_RANGES = (
    (0x3400, 0x4DBF),
    (0x4E00, 0x9FFF),
    (0xF900, 0xFAFF),
    (0x20000, 0x2A6DF),
    (0x3040, 0x30FF),  # kana: treated like CJK (no spaces)
    (0xAC00, 0xD7AF),  # hangul syllables
)


_CJK_CLASS = "".join(f"{chr(lo)}-{chr(hi)}" for lo, hi in _CJK_RANGES)
_CJK_RE = lazy_compile(f"[{_CJK_CLASS}]")
_LETTER_RE = lazy_compile(r"[^\W\d_]")


def is_cjk(ch: str) -> bool:
    """True for a CJK ideograph (or kana/hangul) character."""
    return ch >= "\u3040" and _CJK_RE.match(ch) is not None


def has_cjk(text: str) -> bool:
    """True when ``text`` contains at least one CJK character."""
    return not text.isascii() and _CJK_RE.search(text) is not None


def cjk_ratio(text: str) -> float:
    """Share of CJK characters among the letters of ``text`` (0.0 for text with no letters)."""
    n_letters = len(_LETTER_RE.findall(text))
    if not n_letters:
        return 0.0
    return len(_CJK_RE.findall(text)) / n_letters


def detect_language(text: str) -> str:
    """``"zh"`` when CJK characters make up more than 20 % of the letters, else ``"en"``."""
    return "zh" if cjk_ratio(text) > 0.2 else "en"


_PUNCT_SYMBOL_RE = lazy_compile(r"[^\w\s]|_")


# A leading list marker: "1. ", "2) ", "(3) ", "（4）", "5、", "a) ", "- ", "• ", "一、",
# "第一，". One or two digits only, so "2021. The year ..." or "3.5 %" stay intact.
_LIST_MARKER_RE = lazy_compile(
    r"""^\s*(?:
        [(（]\s*(?:\d{1,2}|[a-zA-Z]|[一二三四五六七八九十]{1,2})\s*[)）]\s*
      | (?:\d{1,2}|[a-z])[.)](?=\s)\s*   # lower case only: "J. K. Rowling" keeps "J."
      | (?:\d{1,2}|[一二三四五六七八九十]{1,2})\s*[、,，.．]\s*(?=[^\d\s])
      | 第[一二三四五六七八九十]{1,2}[、,，:：]\s*
      | [-*•·]\s+
    )""",
    re.VERBOSE,
)


def strip_list_marker(text: str) -> str:
    """``text`` without a leading enumeration marker ("1. ", "（2）", "3、", "- ").

    Key points copied from numbered lists carry them; left in, the "1" reads as a
    fact the answer must contain. Text that would be left empty is returned as is.
    """
    stripped = _LIST_MARKER_RE.sub("", text, count=1).strip()
    return stripped if stripped else text


#: texts up to this many characters have their sentence splits and normal forms cached:
#: the rules judge asks for those of one answer, chunk or name many times over; whole
#: documents (chunking, indexing) are longer and are not kept
_CACHED_CHARS = 20_000


def nfkc(text: str) -> str:
    """``unicodedata.normalize("NFKC", text)``, faster for Chinese text: full-width ASCII
    forms (，：（）！？ ...) are replaced by their NFKC form first -- one character each,
    of combining class 0, so NFKD and hence NFKC of the text are unchanged -- and text
    whose only compatibility characters they were takes NFKC's quick path."""
    if text.isascii():  # NFKC leaves ASCII as it is
        return text
    for ch in set(_RE_FULL_WIDTH.findall(text)):  # a few distinct ones: str.replace each
        text = text.replace(ch, _FULL_WIDTH[ch])
    return unicodedata.normalize("NFKC", text)


_RE_FULL_WIDTH = lazy_compile("[\uff01-\uff5e\u3000]")
_FULL_WIDTH = {chr(c): chr(c - 0xFEE0) for c in range(0xFF01, 0xFF5F)} | {"\u3000": " "}


def normalize(text: str) -> str:
    """NFKC, lower case, punctuation and symbols to spaces, collapsed whitespace."""
    if len(text) <= _CACHED_CHARS:
        return _normalize_cached(text)
    return _normalize(text)


#: ``_PUNCT_SYMBOL_RE.sub(" ", t)`` for ASCII text, as a translation table (built from
#: the pattern; many times faster on ASCII, slower than the regex on CJK text)
_ASCII_PUNCT_TO_SPACE = {c: " " for c in range(128) if _PUNCT_SYMBOL_RE.match(chr(c)) is not None}


def _normalize(text: str) -> str:
    t = nfkc(text).lower()
    if t.isascii():
        return " ".join(t.translate(_ASCII_PUNCT_TO_SPACE).split())
    return " ".join(_PUNCT_SYMBOL_RE.sub(" ", t).split())


_normalize_cached = lru_cache(maxsize=16384)(_normalize)


# A Latin token: letters/digits, keeping inner apostrophes, hyphens, dots and commas in
# numbers ("o'neil", "covid-19", "3.5", "1,200").
_LATIN_TOKEN = lazy_compile(r"[^\W_]+(?:(?:['’\-]|(?<=\d)[.,](?=\d))[^\W_]+)*", re.UNICODE)


_CJK_OR_RUN_RE = lazy_compile(f"[{_CJK_CLASS}]|[^{_CJK_CLASS}]+")


def token_spans(text: str) -> list[tuple[int, int]]:
    """Character spans of tokens: Latin words/numbers, and single CJK characters."""
    if _CJK_RE.search(text) is None:
        return [m.span() for m in _LATIN_TOKEN.finditer(text)]
    spans: list[tuple[int, int]] = []
    for m in _LATIN_TOKEN.finditer(text):
        s, e = m.span()
        seg = m.group()
        if _CJK_RE.search(seg) is None:
            spans.append((s, e))
            continue
        # split mixed runs: each CJK char is its own token, Latin runs stay together
        spans.extend((s + p.start(), s + p.end()) for p in _CJK_OR_RUN_RE.finditer(seg))
    return spans


def word_tokens(text: str) -> list[str]:
    """Lower-cased tokens: words for Latin text, characters for CJK text."""
    return _word_tokens(text)[0]


def _word_tokens(text: str) -> tuple[list[str], bool]:
    """:func:`word_tokens` and whether the (NFKC) text has CJK characters."""
    t = text if text.isascii() else nfkc(text)
    if _CJK_RE.search(t) is None:
        # the fast path of the whole package (BM25 indexing tokenizes every chunk)
        return _latin_words(t), False
    return [t[s:e].lower().replace(",", "") for s, e in token_spans(t)], True


def _latin_words(t: str) -> list[str]:
    """Lower-cased Latin tokens of ``t`` (no CJK), thousands separators removed."""
    if t.isascii():
        # lower-casing ASCII keeps every character's class: tokenize once, lower once
        words = _ascii_tokens(t.lower())
        return [w.replace(",", "") for w in words] if "," in t else words
    return [w.lower().replace(",", "") for w in _LATIN_TOKEN.findall(t)]


#: ASCII characters no token holds, as blanks: letters, digits, apostrophes, hyphens,
#: periods and commas are all a token may contain
_ASCII_NON_TOKEN = {c: " " for c in range(128) if not (chr(c).isalnum() or chr(c) in "'-.,")}


def _ascii_tokens(low: str) -> list[str]:
    """``_LATIN_TOKEN.findall(low)`` for ASCII text, about twice as fast: a token never
    spans a character no token holds, so the text splits there first (C loops), and
    only pieces with an apostrophe, hyphen, period or comma go through the pattern."""
    out: list[str] = []
    for piece in low.translate(_ASCII_NON_TOKEN).split():
        if piece.isalnum():
            out.append(piece)
        else:
            out.extend(_LATIN_TOKEN.findall(piece))
    return out


def count_tokens(text: str) -> int:
    """Approximate model tokens: ~1.3 per Latin word, 1 per CJK character."""
    n_cjk = len(_CJK_RE.findall(text))
    n_words = len(_LATIN_TOKEN.findall(text))
    return n_cjk + round(n_words * 1.3)


STOPWORDS_EN: frozenset[str] = frozenset(
    """a about above after again against all am an and any are as at be because been before
    being below between both but by can could did do does doing down during each few for from
    further had has have having he her here hers herself him himself his how i if in into is it
    its itself just me more most my myself no nor not now of off on once only or other our ours
    ourselves out over own same she should so some such than that the their theirs them
    themselves then there these they this those through to too under until up very was we were
    what when where which while who whom why will with would you your yours yourself
    yourselves s t also did does according mentioned stated described given based please tell
    many much whose whom there's what's it's i'm""".split()
)

STOPWORDS_ZH: frozenset[str] = frozenset(
    "的 了 和 是 在 有 与 及 或 也 就 都 而 其 之 这 那 哪 个 些 什 么 吗 呢 吧 啊 于 被 把 对 从 到 "
    "为 以 将 并 等 中 上 下 由 该 此 其 多 少 如 何 请 根 据 年 月 日".split()
)


def match_tokens(text: str) -> list[str]:
    """Tokens for overlap/matching: Latin words plus CJK character bigrams (unigrams for
    isolated characters), lower-cased, stopwords kept."""
    return _match_tokens(text)[0]


def _match_tokens(text: str) -> tuple[list[str], bool]:
    """:func:`match_tokens` and whether the (NFKC) text has CJK characters.

    One pass over the text: the word tokens of :func:`word_tokens` are never built one
    CJK character at a time. A token run of CJK characters (whitespace between them
    does not end it; any other token does) gives its bigrams, or the character itself
    when it stands alone."""
    t = text if text.isascii() else nfkc(text)
    if _CJK_RE.search(t) is None:
        return _latin_words(t), False
    out: list[str] = []
    run: list[str] = []  # CJK pieces since the last other token

    def flush() -> None:
        chars = "".join(run)
        run.clear()
        if len(chars) == 1:
            out.append(chars)
        else:
            out.extend([chars[i : i + 2] for i in range(len(chars) - 1)])

    for seg in _LATIN_TOKEN.findall(t):
        if _CJK_RE.search(seg) is None:
            if run:
                flush()
            out.append(seg.lower().replace(",", ""))
            continue
        # a mixed run: CJK characters join the run (they have no case), Latin parts stay
        # whole
        for piece in _CJK_RUNS_RE.findall(seg):
            if _CJK_RE.match(piece) is not None:
                run.append(piece)
            else:
                if run:
                    flush()
                out.append(piece.lower().replace(",", ""))
    if run:
        flush()
    return out, True


_CJK_RUNS_RE = lazy_compile(f"[{_CJK_CLASS}]+|[^{_CJK_CLASS}]+")


def content_tokens(text: str) -> list[str]:
    """Matching tokens without stopwords and lone punctuation (see :func:`match_tokens`)."""
    return list(_content_tokens(text))


def has_content(text: str) -> bool:
    """``bool(content_tokens(text))``, stopping at the first content word of text without
    CJK characters (and keeping such one-off pieces of text out of the token cache)."""
    t = text if text.isascii() else nfkc(text)
    if _CJK_RE.search(t) is not None:
        return bool(_content_tokens(text))
    return any(
        m.group().lower().replace(",", "") not in STOPWORDS_EN for m in _LATIN_TOKEN.finditer(t)
    )


@lru_cache(maxsize=8192)
def _content_tokens(text: str) -> tuple[str, ...]:
    toks, has_cjk = _match_tokens(text)
    if not has_cjk:  # no token can be made of Chinese stopwords
        return tuple(filterfalse(STOPWORDS_EN.__contains__, toks))
    # every Chinese stopword is a CJK character, so "all characters are stopwords"
    # implies "all characters are CJK": a token of three characters or more has none
    # (CJK tokens are characters and bigrams) and stays; the others are looked up at once
    return tuple(filterfalse(_DROPPED_WITH_CJK.__contains__, toks))


#: every string of at most two characters that are all Chinese stopwords (and "", which
#: ``all`` accepts too)
_ZH_STOP_CHARS = [w for w in STOPWORDS_ZH if len(w) == 1]
_ZH_STOP_SHORT = frozenset(
    ["", *_ZH_STOP_CHARS, *(a + b for a in _ZH_STOP_CHARS for b in _ZH_STOP_CHARS)]
)
#: what content_tokens drops from text with CJK characters (Chinese stopwords are single
#: CJK characters: tests/test_fast_paths.py)
_DROPPED_WITH_CJK = STOPWORDS_EN | _ZH_STOP_SHORT


def token_f1(prediction: str, reference: str) -> tuple[float, float, float]:
    """(precision, recall, F1) of content tokens (bag-of-tokens, SQuAD style).

    Returns zeros when either side has no content tokens — callers decide whether that is
    a real zero or an undecidable case before calling.
    """
    from collections import Counter

    p = Counter(content_tokens(prediction))
    r = Counter(content_tokens(reference))
    if not p or not r:
        return 0.0, 0.0, 0.0
    common = sum((p & r).values())
    if common == 0:
        return 0.0, 0.0, 0.0
    prec = common / sum(p.values())
    rec = common / sum(r.values())
    return prec, rec, 2 * prec * rec / (prec + rec)


@dataclass(frozen=True, slots=True)
class Sentence:
    """A sentence with its character span in the source text."""

    text: str
    start: int
    end: int


_ABBREVIATIONS = frozenset(
    """mr mrs ms dr prof sr jr st inc ltd co corp no vs etc e.g i.e fig al jan feb mar apr jun
    jul aug sep sept oct nov dec u.s u.k p.m a.m approx dept est gov gen col lt sgt capt rev
    ph.d m.d""".split()
)

# end of an English sentence: . ! ? (optionally closing quotes/brackets) then whitespace
_EN_END = lazy_compile(r"[.!?]+[\"'”’)\]]*(?=\s)")
# end of a Chinese sentence: full-width terminators (no whitespace needed)
_ZH_END = lazy_compile(r"[。！？；!?]+[”’」』）)]*|…{1,2}")


@lru_cache(maxsize=1)
def _abbrev_re() -> re.Pattern[str]:
    return re.compile(r"(?:^|[\s(])([A-Za-z][A-Za-z.]*)$")


_ABBREV_CHARS_STR = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz."
_ABBREV_CHARS = frozenset(_ABBREV_CHARS_STR)


def _is_abbreviation(before: str) -> bool:
    return _is_abbreviation_at(before, len(before))


def _is_abbreviation_at(text: str, end: int) -> bool:
    """``_abbrev_re().search(text[:end])`` read backwards from ``end``: O(word), not
    O(end) (split_sentences calls it at every period)."""
    if end > 0 and text[end - 1] == "\n":  # "$" also matches before a final newline
        end -= 1
    # the run of letters and periods before ``end``: str.rstrip finds it in a window (a
    # C loop), walked on only when it fills the window
    lo = end - 32 if end > 32 else 0
    window = text[lo:end]
    p = lo + len(window.rstrip(_ABBREV_CHARS_STR))
    if p == lo:
        while p > 0 and text[p - 1] in _ABBREV_CHARS:
            p -= 1
    if p == end or not ("a" <= text[p].lower() <= "z"):
        return False
    if p > 0 and not (text[p - 1] == "(" or text[p - 1].isspace()):
        return False
    word = text[p:end].lower().rstrip(".")
    if word in _ABBREVIATIONS:
        return True
    # single initials such as "J." in "J. Smith"
    return len(word) == 1 and word.isalpha()


def split_paragraphs(text: str) -> list[Sentence]:
    """Paragraph spans separated by blank lines (or a line that is a Markdown header)."""
    spans: list[Sentence] = []
    pos = 0
    for m in re.finditer(r"\n\s*\n", text):
        if text[pos : m.start()].strip():
            spans.append(_trimmed(text, pos, m.start()))
        pos = m.end()
    if text[pos:].strip():
        spans.append(_trimmed(text, pos, len(text)))
    return spans


def _trimmed(text: str, start: int, end: int) -> Sentence:
    while start < end and text[start].isspace():
        start += 1
    while end > start and text[end - 1].isspace():
        end -= 1
    return Sentence(text[start:end], start, end)


def split_sentences(text: str) -> list[Sentence]:
    """Sentences with exact character spans, for English and Chinese text.

    Boundaries: line breaks, full-width Chinese terminators, and English ``.!?`` followed
    by whitespace unless the period ends a known abbreviation, an initial, or a number.
    ``text[s.start:s.end] == s.text`` for every sentence.
    """
    if len(text) <= _CACHED_CHARS:
        return list(_split_sentences_cached(text))
    return _split_sentences(text)


def _split_sentences(text: str) -> list[Sentence]:
    cuts: set[int] = set()
    # runs of newlines: both ends cut
    at = text.find("\n")
    while at >= 0:
        end = at + 1
        while text.startswith("\n", end):
            end += 1
        cuts.add(at)
        cuts.add(end)
        at = text.find("\n", end)
    if "!" in text or "?" in text or (not text.isascii() and _ZH_END_START.search(text)):
        for m in _ZH_END.finditer(text):
            cuts.add(m.end())
    for m in _EN_END.finditer(text):
        end = m.end()
        if text[m.start()] == "." and _is_abbreviation_at(text, m.start()):
            continue
        # a decimal like "3." followed by space then digit is still a boundary; fine
        cuts.add(end)
    bounds = sorted(c for c in cuts if 0 < c < len(text))
    out: list[Sentence] = []
    prev = 0
    for c in [*bounds, len(text)]:
        piece = text[prev:c]
        sentence = piece.strip()
        if sentence:  # as _trimmed(text, prev, c), with str.strip doing the scanning
            start = prev + len(piece) - len(piece.lstrip())
            out.append(Sentence(sentence, start, start + len(sentence)))
        prev = c
    return out


#: a Chinese sentence end starts with one of these (a cheap test before _ZH_END, whose
#: alternatives keep the regex engine from skipping ahead); "!" and "?" are the ASCII ones
_ZH_END_START = lazy_compile(r"[。！？；!?…]")


@lru_cache(maxsize=4096)
def _split_sentences_cached(text: str) -> tuple[Sentence, ...]:
    return tuple(_split_sentences(text))


# -- case-insensitive patterns on ASCII text ---------------------------------------------

#: an ASCII capital that is a literal of the pattern (not the letter of an escape such as
#: \S or \W: preceded by an odd number of backslashes)
_PATTERN_CAPITAL = lazy_compile(r"(?<!\\)(?:\\\\)*[A-Z]")


class FoldedPattern:
    """A case-insensitive pattern that searches text several times faster.

    A case-insensitive search finds what the same pattern without ``IGNORECASE`` finds
    in the lower-cased text, at the same offsets, provided the pattern's own letters are
    lower case and its other characters caseless (CJK, punctuation): lower-casing keeps
    every character's length and class (``\\w``, ``\\s``, ``\\d``) and maps a character
    to an ASCII letter exactly when the case-insensitive pattern would match it to that
    letter -- for every character but three, "İ" (two characters lower-cased), "ı" and
    "ſ" (matched to "i" and "s" without lower-casing to them), checked over all of
    Unicode in tests/test_fast_paths.py. Text with one of those three (and patterns with
    capitals, other cased characters, or without ``IGNORECASE``) is searched with the
    pattern as given. Matches come from the lower-cased text: their offsets are the
    text's, their group strings lower case.
    """

    __slots__ = ("_cased", "pattern")

    def __init__(self, pattern: re.Pattern[str]) -> None:
        self.pattern = pattern
        usable = (
            pattern.flags & re.IGNORECASE
            and not _PATTERN_CAPITAL.search(pattern.pattern)
            and all(_caseless(ch) for ch in pattern.pattern if not ch.isascii())
        )
        self._cased = (
            re.compile(pattern.pattern, pattern.flags & ~re.IGNORECASE) if usable else None
        )

    def lowered(self, text: str) -> str | None:
        """``text`` lower-cased when the fast pattern may search it, else ``None``."""
        if self._cased is None:
            return None
        if text.isascii() or not ("\u0130" in text or "\u0131" in text or "\u017f" in text):
            return text.lower()
        return None

    def search(self, text: str, pos: int = 0) -> re.Match[str] | None:
        low = self.lowered(text)
        return self.pattern.search(text, pos) if low is None else self.search_lowered(low, pos)

    def search_lowered(self, low: str, pos: int = 0) -> re.Match[str] | None:
        """Search text that :meth:`lowered` returned."""
        cased = self._cased
        assert cased is not None, "lowered() gives text only for a pattern that folds"
        return cased.search(low, pos)


#: categories of the characters that are some character's lower case
_LOWER_IMAGES = frozenset({"Ll", "Lu", "Lt", "Lm", "So", "Nl", "Mn"})


def _caseless(ch: str) -> bool:
    """A pattern character no other character lower-cases to, and without case."""
    return ch.lower() == ch == ch.upper() and unicodedata.category(ch) not in _LOWER_IMAGES
