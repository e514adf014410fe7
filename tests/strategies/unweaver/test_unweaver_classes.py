"""UnWeaver's equivalence classes (strategies/unweaver/entity_classes.py): name normalization, syntactic classes, the
chunk–class
matrix D, semantic merging."""

from __future__ import annotations

import numpy as np
import pytest

from gemrag.strategies.unweaver.entity_classes import equivalence_classes, merge_classes, normalize_name


@pytest.mark.parametrize(
    ("a", "b"),
    [
        ("World Health Organization", "world health organization"),  # case
        ("World  Health\tOrganization ", " World Health Organization"),  # whitespace
        ("U.S. Army", "US Army"),  # punctuation inside
        ("COVID-19", "covid 19"),  # a dash between words is a space
        ("The Beatles", "Beatles"),  # leading article
        ("an Apple", "APPLE"),
        ("A  Tale", "tale"),
        ("The A-Team", "A-Team"),
        ("Wuhan,", "wuhan"),  # trailing punctuation
        ("Ｗｕｈａｎ", "wuhan"),  # NFKC: full-width letters
    ],
)
def test_equivalent_names_share_a_key(a: str, b: str) -> None:
    assert normalize_name(a) == normalize_name(b)


@pytest.mark.parametrize(
    ("a", "b"),
    [("Paris", "Parish"), ("The Who", "Who Knows"), ("SARS-CoV-2", "SARS-CoV"), ("A-Team", "Team")],
)
def test_different_names_stay_apart(a: str, b: str) -> None:
    assert normalize_name(a) != normalize_name(b)


def test_an_article_alone_is_kept_and_punctuation_only_is_empty() -> None:
    assert normalize_name("The") == "the"
    assert normalize_name("...") == ""


def test_classes_group_members_in_chunk_order_and_build_the_binary_chunk_class_matrix() -> None:
    chunks = [
        ["The Beatles", "Liverpool"],
        ["liverpool", "John Lennon", "Liverpool."],  # named twice in one chunk: one approval
        [],
        ["Beatles", "...", "john lennon"],  # "..." joins no class
    ]
    classes = equivalence_classes(chunks)
    assert classes.keys == ["beatles", "liverpool", "john lennon"]
    assert classes.names == ["The Beatles", "Liverpool", "John Lennon"]  # first surface form
    assert classes.members[0] == [(0, 0), (3, 0)]
    assert classes.members[1] == [(0, 1), (1, 0), (1, 2)]
    D = classes.incidence.toarray()
    assert D.shape == (3, 4)
    np.testing.assert_array_equal(D, [[1, 0, 0, 1], [1, 1, 0, 0], [0, 1, 0, 1]])


def test_semantic_merge_joins_connected_classes_and_keeps_the_earliest_name() -> None:
    classes = equivalence_classes([["SARS-CoV-2"], ["novel coronavirus", "Wuhan"], ["2019-nCoV"]])
    merged = merge_classes(classes, (np.array([0, 3]), np.array([1, 1])))  # 0~1, 3~1
    assert merged.names == ["SARS-CoV-2", "Wuhan"]
    assert merged.members[0] == [(0, 0), (1, 0), (2, 0)]
    np.testing.assert_array_equal(merged.incidence.toarray(), [[1, 1, 1], [0, 1, 0]])
    assert merge_classes(classes, (np.array([], np.int64), np.array([], np.int64))) is classes
    with pytest.raises(ValueError, match="lie in"):
        merge_classes(classes, (np.array([0]), np.array([9])))


def test_the_entity_cap_is_sized_by_the_chunk_or_absent_and_names_its_artefact_version() -> None:
    """The paper sets no limit on entities per chunk (section 2); the default cap grows with the chunk (12 at
    T = 100, so artefacts made under the old fixed cap stay valid), 0 removes it from the schema."""
    from gemrag.strategies.unweaver.prompts import ENTITIES_VERSION, entities_schema, entities_version, entity_cap

    assert entity_cap(None, 100) == 12 and entity_cap(None, 256) == 32 and entity_cap(None, 1200) == 150
    assert entity_cap(0, 100) == 0 and entity_cap(5, 1200) == 5
    assert entities_version(12) == ENTITIES_VERSION
    assert entities_version(32) != entities_version(0) != ENTITIES_VERSION
    assert entities_schema(32)["properties"]["entities"]["maxItems"] == 32
    assert "maxItems" not in entities_schema(0)["properties"]["entities"]
