"""The Case is a frozen value with a stable id, and refuses impossible batches by field."""

from __future__ import annotations

import dataclasses

import pytest

from scenarios.case import Case
from scenarios.errors import InvalidCase

BASE = dict(
    layout="paged",
    qo_lens=(3, 0),
    kv_lens=(17, 4),
    num_qo_heads=8,
    num_kv_heads=2,
    head_dim_qk=64,
    head_dim_vo=64,
    page_size=4,
    causal=True,
)


def test_case_round_trips_through_json_with_the_same_id():
    """to_json/from_json gives an equal case with an equal id."""
    c = Case(**BASE, mask="custom", window_left=3, logits_soft_cap=20.0)
    back = Case.from_json(c.to_json())
    assert back == c and back.id == c.id


def test_case_id_is_stable_across_versions():
    """The id of a fixed case is pinned: reports and baselines key on it."""
    assert Case(**BASE).id == "paged-b2-h8x2-d64-bf16-p4NHD-causal+zero_len-f38b07393f"


def test_label_is_not_part_of_identity():
    """Two cases differing only in label share an id."""
    assert Case(**BASE, label="a").id == Case(**BASE, label="b").id


def test_case_is_frozen():
    """Assigning a field raises."""
    with pytest.raises(dataclasses.FrozenInstanceError):
        Case(**BASE).causal = False  # type: ignore[misc]


@pytest.mark.parametrize(
    "change,field",
    [
        (dict(num_kv_heads=3), "num_kv_heads"),
        (dict(kv_lens=(1,)), "kv_lens"),
        (dict(qo_lens=(-1, 0)), "qo_lens"),
        (dict(layout="dense"), "layout"),
        (dict(q_dtype="int8"), "q_dtype"),
        (dict(o_dtype="e4m3fn"), "o_dtype"),
        (dict(window_left=-2), "window_left"),
        (dict(logits_soft_cap=-1.0), "logits_soft_cap"),
        (dict(q_scale=2.0), "q_scale"),
        (dict(layout="ragged"), "page_size"),
        (dict(layout="decode"), "qo_lens"),
        (dict(layout="single"), "qo_lens"),
        (dict(sm_scale=0.0), "sm_scale"),
    ],
)
def test_invalid_case_names_the_offending_field(change, field):
    """Each impossible value raises InvalidCase carrying that field and a fix."""
    with pytest.raises(InvalidCase) as e:
        Case(**{**BASE, **change})
    assert e.value.field == field
    assert e.value.fix


def test_kv_heads_that_do_not_divide_name_both_counts():
    """The GQA error names the query head count it failed to divide."""
    with pytest.raises(InvalidCase) as e:
        Case(**{**BASE, "num_kv_heads": 3})
    assert e.value.value == 3 and "num_qo_heads=8" in e.value.expected


def test_from_json_refuses_unknown_fields():
    """A misspelt field is an error, not silently dropped."""
    d = Case(**BASE).to_json()
    d["casual"] = True
    with pytest.raises(InvalidCase) as e:
        Case.from_json(d)
    assert e.value.value == ["casual"]


def test_features_name_what_the_case_switches_on():
    """features lists causal, masks, window, soft cap, GQA, fp8 and zero lengths."""
    c = Case(**BASE, mask="custom", window_left=2, logits_soft_cap=5.0)
    assert set(c.features) == {"causal", "custom_mask", "window", "soft_cap", "gqa", "zero_len"}
    assert Case("ragged", (), (), 4, 4).features == ("empty_batch",)
    fp8 = Case("single", (2,), (2,), 4, 1, q_dtype="e4m3fn", kv_dtype="e4m3fn", q_scale=0.5)
    assert set(fp8.features) == {"mqa", "fp8"}


def test_features_names_every_feature_a_case_can_have() -> None:
    from kernels.flashinfer import matrix as flashinfer_matrix
    from scenarios import matrix
    from scenarios.case import FEATURES

    seen = {f for c in matrix.build("standard") + flashinfer_matrix.build("quick") for f in c.features}
    assert seen == set(FEATURES)


_GOOD = {"layout": "ragged", "qo_lens": [4, 1], "kv_lens": [9, 3], "num_qo_heads": 4, "num_kv_heads": 2}


@pytest.mark.parametrize(
    "field,value",
    [
        pytest.param("causal", "false", id="bool-as-string"),
        pytest.param("causal", 0, id="bool-as-integer"),
        pytest.param("return_lse", "yes", id="bool-as-word"),
        pytest.param("qo_lens", [4.5, 1], id="length-as-float"),
        pytest.param("qo_lens", "abc", id="lengths-as-string"),
        pytest.param("kv_lens", [9, True], id="length-as-bool"),
        pytest.param("qo_lens", 4, id="lengths-as-integer"),
        pytest.param("num_qo_heads", 4.0, id="heads-as-float"),
        pytest.param("num_kv_heads", True, id="heads-as-bool"),
        pytest.param("page_size", "16", id="page-size-as-string"),
        pytest.param("window_left", None, id="window-null"),
        pytest.param("logits_soft_cap", "30", id="cap-as-string"),
        pytest.param("logits_soft_cap", False, id="cap-as-bool"),
        pytest.param("sm_scale", "0.1", id="scale-as-string"),
        pytest.param("layout", 1, id="layout-as-integer"),
        pytest.param("q_dtype", None, id="dtype-null"),
    ],
)
def test_a_json_value_of_the_wrong_type_is_refused_not_coerced(field, value):
    """ "causal": "false" would run a causal case and [4.5] a query of 4: each is refused, naming the field."""
    with pytest.raises(InvalidCase) as e:
        Case.from_json({**_GOOD, field: value})
    assert e.value.field == field and e.value.value == value and f'"{field}": ' in e.value.fix


def test_every_case_field_has_its_json_type_and_well_typed_json_is_taken():
    """A new Case field must say what JSON it takes; a case's own JSON always passes the check."""
    from scenarios.case import _JSON_TYPES

    assert set(_JSON_TYPES) == {f.name for f in dataclasses.fields(Case)}
    full = Case.from_json({**_GOOD, "causal": True, "sm_scale": 0.125, "logits_soft_cap": 30, "q_scale": None})
    assert Case.from_json(full.to_json()) == full and full.causal is True and full.logits_soft_cap == 30


def test_the_cli_refuses_a_wrongly_typed_case_in_one_line(tmp_path, capsys):
    """`attncheck run --case '{... "causal": "false"}'`: exit 2, one line naming the field and the fix."""
    import json

    from conformance import cli

    code = cli.main(
        ["run", "--device", "cpu", "--case", json.dumps({**_GOOD, "causal": "false"}), "--out", str(tmp_path / "o")]
    )
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1 and "Case.causal='false'" in err[0] and "true or false" in err[0]
    assert not (tmp_path / "o").exists()
