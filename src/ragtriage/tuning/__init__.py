"""Turn the top diagnosis advice into a concrete pipeline config change.

:func:`apply_advice` maps the highest-ranked advice (:func:`ragtriage.diagnosis.advice.rank_advice`)
to a new :class:`ragtriage.config.PipelineConfig`, one setting per advice, and says what it
changed and why, so that a run can be re-run with the fix and compared.
"""

from ragtriage.tuning._apply import AdviceChange, AppliedAdvice, apply_advice, change_for_hint
from ragtriage.tuning._story import story_lines

__all__ = [
    "AdviceChange",
    "AppliedAdvice",
    "apply_advice",
    "change_for_hint",
    "story_lines",
]
