"""When the iterators verify that ranks share a batch: every step, never,
or (the default, the same in both worlds) steps 1, 2, 4, 8... and the step
that ends an epoch."""
import pytest

from chainermn_lite.iterators.batch_check import check_due


def test_default_checks_powers_of_two_and_epoch_ends():
    due = [step for step in range(1, 70) if check_due(None, step)]
    assert due == [1, 2, 4, 8, 16, 32, 64]
    assert check_due(None, 37, ends_epoch=True)
    assert not check_due(None, 37, ends_epoch=False)


@pytest.mark.parametrize('check,expected', [(True, True), (False, False)])
def test_explicit_setting_wins(check, expected):
    assert all(check_due(check, step, ends_epoch) is expected
               for step in (1, 3, 64) for ends_epoch in (False, True))
