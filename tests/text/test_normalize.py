"""The normalisation policy, step by step, and its offset map."""

from __future__ import annotations

import unicodedata

import pytest

from quotebound import NORMALIZATION_VERSION, NormalizedText, normalize
from quotebound.text.normalize import _COMPOSING_STARTERS


def test_composing_starters_match_unicodedata() -> None:
    """Recompute the ccc=0 characters that compose with a preceding character."""
    found = set()
    for cp in range(0x110000):
        decomposition = unicodedata.decomposition(chr(cp))
        if not decomposition or decomposition.startswith("<"):
            continue
        parts = [int(x, 16) for x in decomposition.split()]
        if len(parts) == 2 and unicodedata.combining(chr(parts[1])) == 0:
            found.add(parts[1])
    found |= set(range(0x1161, 0x1176)) | set(range(0x11A8, 0x11C3))  # Hangul V and T jamo
    assert found == set(_COMPOSING_STARTERS)


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("Fish &amp; Chips &#8217;n&rsquo; more", "fish & chips 'n' more"),
        ("AT&T and Q&A", "at&t and q&a"),
        ("ﬁnal ﬂow", "final flow"),
        ("１２３ weeks", "123 weeks"),
        ("CASE Folding", "case folding"),
        ("“double” ‘single’ «guillemets»", '"double" \'single\' "guillemets"'),
        ("a – b — c − d ‐ e", "a - b - c - d - e"),
        ("zero\u200bwidth soft\u00adhyphen \ufeffbom \u200dzwj", "zerowidth softhyphen bom zwj"),
        ("no\u00a0break\u2009thin\u3000ideographic", "no break thin ideographic"),
        ("  lots \t of\n\n whitespace  ", "lots of whitespace"),
        ("e\u0301te\u0301", "été"),
        ("ΟΔΟΣ", "οδοσ"),
        ("x &nbsp; y", "x y"),
        # references are decoded until none is left: '&amp;dd;' is '&dd;' is U+2146 -> 'd'
        ("x &amp;dd; y", "x d y"),
        ("&amp;amp;lt;", "<"),
    ],
)
def test_policy_steps(raw: str, expected: str) -> None:
    assert normalize(raw) == expected


def test_never_folds_letters_into_other_letters() -> None:
    assert normalize("сompany") != normalize("company")  # Cyrillic с
    assert normalize("straße") == "straße"  # no casefold to "strasse"
    assert normalize("16 weeks") != normalize("14 weeks")


def test_version_is_stable() -> None:
    assert NORMALIZATION_VERSION == "qb-norm-2"


def test_offsets_map_back_through_every_kind_of_unit() -> None:
    text = "The “Policy”\u00a0&amp; its ﬁne\u200b print:  16\u2009weeks."
    nt = NormalizedText(text)
    for quote in ('"policy" & its fine print', "fine print: 16 weeks", "policy"):
        span = nt.locate(normalize(quote))
        assert span is not None, quote
        assert normalize(text[span[0] : span[1]]) == normalize(quote)


def test_match_never_starts_inside_an_expanded_unit() -> None:
    nt = NormalizedText("the ﬁne print")
    assert nt.locate("ine print") is None
    assert nt.locate("fine print") == (4, 13)


@pytest.mark.parametrize(
    ("source", "needle", "found"),
    [
        ("first 14 weeks", "4 weeks", False),
        ("1.5 percent of salary", "5 percent of salary", False),
        ("1,000 dollars", "000 dollars", False),
        ("up to 140 days", "up to 14", False),
        ("see page 14.", "see page 14", True),
        ("in 2026, the plan", "in 2026", True),
        ("unpaid leave", "paid leave", False),
        ("(paid leave)", "paid leave", True),
    ],
)
def test_word_and_number_boundaries(source: str, needle: str, found: bool) -> None:
    assert (NormalizedText(source).locate(normalize(needle)) is not None) is found


# -- qb-norm-2: optional marks of Arabic and Hebrew ---------------------------------------------

_VOCALISED_ARABIC = "بِسْمِ اللَّهِ الرَّحْمَٰنِ الرَّحِيمِ"
_POINTED_HEBREW = "בְּרֵאשִׁית בָּרָא אֱלֹהִים"


@pytest.mark.parametrize(
    ("vocalised", "bare"),
    [
        (_VOCALISED_ARABIC, "بسم الله الرحمن الرحيم"),  # harakat, shadda, sukun, dagger alif
        ("كِتَابٌ", "كتاب"),  # tanwin
        ("كـتـاب", "كتاب"),  # tatweel
        (_POINTED_HEBREW, "בראשית ברא אלהים"),  # niqqud, dagesh, shin dot
        ("\ufb2a", "ש"),  # the presentation form U+FB2A: NFKC splits it, the dot goes
        ("בְּרֵאשִׁ֖ית", "בראשית"),  # a cantillation mark (tipeha)
    ],
)
def test_optional_marks_fold_on_both_sides(vocalised: str, bare: str) -> None:
    assert normalize(vocalised) == normalize(bare) == bare
    nt = NormalizedText(f"« {vocalised} ».")
    span = nt.locate(normalize(bare))
    assert span is not None
    assert nt.original[span[0] : span[1]] == vocalised  # the marks are inside the span


def test_letters_and_punctuation_of_those_scripts_stay() -> None:
    assert normalize("أحمد") != normalize("احمد")  # hamza forms are letters
    assert normalize("أَحْمَد") == normalize("أحمد")
    assert normalize("תל־אביב") == "תל־אביב"  # maqaf, the Hebrew hyphen, stays
    assert normalize("café") != normalize("cafe")  # Latin accents are not optional marks
    assert normalize("naïve") == "naïve"


def test_a_quote_cannot_start_or_end_inside_a_letter_and_its_marks() -> None:
    nt = NormalizedText("بِسْمِ")
    assert nt.locate("بسم") == (0, 6)
    assert nt.span(0, 1) == (0, 2)  # the letter with its kasra
