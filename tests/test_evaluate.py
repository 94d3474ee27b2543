"""The solve check (pufferlib.evaluate): a window of whole epochs of the newest training episodes
that makes a run a candidate for the confirmation on fresh episodes."""

from pufferlib.evaluate import RecentMean, SolveCheck


def test_the_solve_window_holds_whole_epochs_of_the_newest_episodes():
    window = RecentMean(100)
    window.add(60, 0.0)
    assert not window.ready()  # only the quickest episodes have ended
    window.add(60, 1.0)
    assert window.ready() and window.value() == 0.5  # the first epoch is still needed for 100
    window.add(50, 1.0)
    assert window.value() == 1.0  # 110 episodes without the first epoch: it is dropped

    check = SolveCheck("score", 0.9, 0.05, 100)
    assert not check.candidate({"episodes": 99, "score": 1.0})
    assert check.candidate({"episodes": 1, "score": 0.86})  # mean 0.9986 reaches 0.9 - 0.05
    assert check.candidate({})  # an epoch with no episode ended keeps the window
    assert not check.candidate({"episodes": 200, "score": 0.8})
    check.recent.clear()  # as a failed confirmation does
    assert not check.candidate({"episodes": 50, "score": 1.0})
    assert not SolveCheck("score", None, 0.0, 1).candidate({"episodes": 5, "score": 1.0})  # no target, no solve
