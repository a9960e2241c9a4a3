"""The streaming benchmark's own arithmetic and sampling."""

from __future__ import annotations

import pytest

from eval.bench_streaming import EN, LATIN, OTHER, Sample, load_samples, percentile, takes_fast_path


def test_percentiles_use_the_nearest_rank():
    values = list(range(1, 101))
    assert percentile(values, 50) == 50
    assert percentile(values, 99) == 99
    assert percentile([5.0], 99) == 5.0


@pytest.mark.parametrize(
    ("pieces", "count"),
    [
        (("I", " think", " so.", " Then", " more."), 4),  # the piece after the full stop
        (("Yes", "!"), 2),
        (("no", " end", " here"), 3),
        (("好的。", "然后"), 2),
    ],
)
def test_the_first_sentence_ends_where_a_reader_can_see_it(pieces, count):
    assert Sample("g", "p", pieces).first_sentence_pieces == count


def test_the_fast_path_is_read_from_the_gate_as_a_stream_meets_it():
    assert takes_fast_path(("To", " start"))
    assert takes_fast_path(("In", " 1996"))
    assert not takes_fast_path(("I", "'m", " sorry"))
    assert not takes_fast_path(("好", "的"))


def test_samples_are_answers_grouped_by_script_and_reproducible():
    samples = load_samples(per_group=5, max_pieces=12, seed=3)
    assert [s.group for s in samples] == [EN] * 5 + [LATIN] * 5 + [OTHER] * 5
    assert all(0 < len(s.pieces) <= 12 for s in samples)
    assert len({s.prompt for s in samples}) == 15
    assert samples == load_samples(per_group=5, max_pieces=12, seed=3)
