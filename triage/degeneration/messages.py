"""The conversation: a message's text and role, texts compared as words, and what the user asked
to have repeated (``write 'hello' 50 times``)."""

from __future__ import annotations

import re

_WORD_RE = re.compile(r"\w+")


NUMBER_WORDS = {w: i for i, w in enumerate(
    "zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen sixteen "
    "seventeen eighteen nineteen twenty".split())}
NUMBER_WORDS.update({"thirty": 30, "forty": 40, "fifty": 50, "sixty": 60, "seventy": 70, "eighty": 80,
                      "ninety": 90, "hundred": 100, "a hundred": 100, "one hundred": 100, "a thousand": 1000,
                      "thousand": 1000, "twice": 2, "thrice": 3})
_COUNT = r"(?P<n>\d{1,5}|" + "|".join(sorted((re.escape(w) for w in NUMBER_WORDS), key=len, reverse=True)) + ")"
# A repetition verb, its object, then the count: "write the word 'hello' 50 times", "repeat the
# sentence '…' twenty times", "say it twice". Not "what is 500 times 3" (no verb; a number after
# the count) nor "50x faster".
_REPEAT_REQUEST_RE = re.compile(
    r"\b(?:repeat|write|say|print|type|spell|list|output|copy|echo|sing|chant|shout|draw|generate|give me)\b"
    r"(?P<obj>[^\n]{0,200}?)(?:\b" + _COUNT + r"\s*times\b(?!\s*\d)|\b(?P<w>twice|thrice)\b)", re.I)


def requested_repetition(messages) -> tuple[int, str] | None:
    """(N, the words of what is to be repeated) when the last user message asks for something N
    times ("write 'hello' 50 times", "repeat this sentence twenty times"), else None: N copies of
    the unit the user named are the answer, not a loop. The object is what stands between the
    verb and the count, so a loop of other words is never excused."""
    for msg in reversed(list(messages or ())):
        if message_role(msg) != "user":
            continue
        best = None
        for m in _REPEAT_REQUEST_RE.finditer(message_text(msg)):
            word = (m.group("n") or m.group("w")).lower()
            count = int(word) if word.isdigit() else NUMBER_WORDS[word]
            if best is None or count > best[0]:
                best = (count, norm_words(m.group("obj")))
        return best
    return None


# What a request for verse names: its lines and stanzas come back by design (a refrain, a counting
# rhyme's numbers, a cumulative rhyme's lines).
_VERSE_RE = re.compile(
    r"\b(?:songs?|poems?|poetry|rhym\w*|chants?|lyrics?|verses?|chorus\w*|refrains?|shant(?:y|ies)|lullab(?:y|ies)"
    r"|cradle ?songs?|hymns?|ballads?|limericks?|haikus?|cheers?|anthems?|nursery|jingles?|raps?|sonnets?|odes?"
    r"|stanzas?|carols?|pantoums?|villanelles?|tongue[- ]twisters?)\b", re.I)


def last_user_text(messages) -> str | None:
    """The text of the last user message, or None when there is none."""
    for msg in reversed(list(messages or ())):
        if message_role(msg) == "user":
            return message_text(msg)
    return None


def verse_requested(messages) -> bool:
    """The last user message asks for verse: a song, a poem, a rhyme, a chant, lyrics …"""
    text = last_user_text(messages)
    return text is not None and _VERSE_RE.search(text) is not None


# A request whose answer is a sequence of near-identical lines: alternation (two medicines in turn),
# a schedule or a rota asked for, a conjugation, a trace of a loop.  The same line with one slot
# changing, or two items in turn, is what it asks for.  The request must ask for the sequence (a
# verb, or a schedule to make): the water *cycle*, a *shift* to factories, a *rotation* of the earth
# are topics, not sequences.
_SEQUENCE_RE = re.compile(
    r"\b(?:alternat(?:e|es|ing)\b|(?:take|taking|takes|in) turns\b|rotas?\b|conjugat\w*|declension|decline (?:the|this)\b"
    r"|trace (?:this|the|it|through|how|what|each|every|step)\b|trace [\w.]+\(|step through (?:this|the) (?:loop|code|function)"
    r"|every \d+ (?:minutes?|hours?|days?|weeks?)\b"
    r"|(?:make|create|write|plan|draw up|build|give me|set up|prepare)\s+(?:me\s+)?(?:a|an|the|my|our)?\s*"
    r"(?:[\w-]+\s+){0,3}?(?:schedule|timetable|rota|rotation|shift pattern|shift plan|roster)\b)", re.I)


def sequence_requested(messages) -> bool:
    """The last user message asks for a sequence of near-identical lines: alternation, a schedule
    or rota to make, a conjugation, a trace."""
    text = last_user_text(messages)
    return text is not None and _SEQUENCE_RE.search(text) is not None


def norm_words(s: str) -> str:
    """The lower-cased words of ``s`` joined by single spaces (for comparing texts as words)."""
    return " ".join(_WORD_RE.findall(s.lower()))


def message_text(msg) -> str:
    if isinstance(msg, str):
        return msg
    if not isinstance(msg, dict):
        return ""
    c = msg.get("content")
    if isinstance(c, str):
        return c
    if isinstance(c, list):  # OpenAI content parts
        return " ".join(p.get("text", "") for p in c if isinstance(p, dict) and isinstance(p.get("text"), str))
    return ""


def message_role(msg) -> str:
    if isinstance(msg, dict) and isinstance(msg.get("role"), str):
        return msg["role"].lower()
    return ""
