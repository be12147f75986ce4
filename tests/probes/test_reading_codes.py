"""A coder's labelled lines: what it set aside is not what it assigns."""

from medmon.probes.reading.codes import read_committed_codes


def test_a_code_listed_as_rejected_is_not_committed() -> None:
    reading = read_committed_codes("Ruled out: N39.0\nAssigned: N30.00", structured=False)
    assert reading.value == frozenset({"N30.00"})


def test_a_draft_code_is_replaced_by_the_final_one() -> None:
    reading = read_committed_codes("Draft: I50.9\n\nLooking again, it is systolic.\n\nFinal: I50.22", structured=False)
    assert reading.value == frozenset({"I50.22"})
