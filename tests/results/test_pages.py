"""``python -m launch results``: pages whose generated parts are drawn from the data, a
changed number caught by ``--check``, a stale figure caught by its digest, and the
repository's own pages equal to the repository's own data."""

from __future__ import annotations

import io
import re
import subprocess
import sys

import pytest

from launch.results.data import ROOT
from launch.results.pages import add, generate
from tests.results.conftest import ERROR_RATES, write_experiment

PAGE = """# A study

Prose stays as it is.

<!-- results: time-to-goal study=demo -->
<!-- /results -->

<!-- results: final study=demo metrics=eval/*-play/error_rate,eval/*-uniform/value_mae -->
<!-- /results -->

<!-- results: figure study=demo kind=km -->
<!-- /results -->

```
<!-- results: final study=quoted-in-a-code-block -->
<!-- /results -->
```
"""


@pytest.fixture
def site(tmp_path):
    add(write_experiment(tmp_path / "exp"), "demo", commit=None, machine=None, data_root=tmp_path / "results")
    (tmp_path / "docs" / "results").mkdir(parents=True)
    (tmp_path / "docs" / "results" / "demo.md").write_text(PAGE)
    (tmp_path / "docs" / "results" / "index.md").write_text("<!-- results: index -->\n<!-- /results -->\n")
    (tmp_path / "README.md").write_text("# Front\n\n<!-- results: headline -->\n<!-- /results -->\n")
    return tmp_path


def _generate(site, check: bool) -> tuple[int, str]:
    out = io.StringIO()
    return generate(root=site, data_root=site / "results", check=check, out=out), out.getvalue()


@pytest.mark.slow
def test_the_pages_are_drawn_from_the_data_and_a_changed_number_fails_the_check(site):
    assert _generate(site, check=True)[0] == 1  # empty parts: not what the data gives
    assert _generate(site, check=False)[0] == 0
    page = (site / "docs" / "results" / "demo.md").read_text()
    assert page.startswith("# A study\n\nProse stays as it is.")
    # The conftest's AVI seeds hold 0 from 128, 512 and 384: the KM median is 384; AlphaZero's
    # one seed of three that held from 384 leaves its median unbounded.
    assert re.search(r"\| hex 3x3 \| AVI \| 3 \| 3 of 3 \| 256 \[128, 384\] \| 3 of 3 \| 384 \[128, 512\] \|", page)
    assert "| hex 3x3 | AlphaZero S=32 | 3 | 1 of 3 | ∞" in page
    assert "quoted-in-a-code-block" in page and (site / "docs" / "results" / "figures" / "demo-km.png").is_file()
    readme = (site / "README.md").read_text()
    assert "hex 3x3 AVI: 3 of 3 seeds, 384 [128, 512]" in readme and "(docs/results/demo.md)" in readme
    index = (site / "docs" / "results" / "index.md").read_text()
    assert "[demo](demo.md)" in index and "| 6 of 6 |" in index  # finished of planned
    assert _generate(site, check=True) == (0, "results: 3 pages match their data\n")

    (site / "docs" / "results" / "demo.md").write_text(page.replace("384 [128, 512]", "385 [128, 512]"))
    rc, said = _generate(site, check=True)
    assert rc == 1 and "docs/results/demo.md: its generated parts differ from its data" in said
    assert "-| hex 3x3 | AVI | 3 | 3 of 3 | 256 [128, 384] | 3 of 3 | 385" in said


def test_a_figure_drawn_from_other_data_fails_the_check(site, tmp_path):
    assert _generate(site, check=False)[0] == 0
    # The same study added again from trials with other values: the figure's digest is stale.
    other = {k: [0.9] + v[1:] for k, v in ERROR_RATES.items()}
    add(write_experiment(tmp_path / "exp2", rates=other), "demo", commit=None, machine=None,
        data_root=site / "results")
    rc, said = _generate(site, check=True)
    assert rc == 1 and "demo-km.png: drawn from other data" in said


def test_a_marker_without_its_study_or_kind_is_named(site):
    page = site / "docs" / "results" / "demo.md"
    page.write_text("<!-- results: final study=nowhere metrics=x -->\n<!-- /results -->\n"
                    "<!-- results: nonsense -->\n<!-- /results -->\n")
    rc, said = _generate(site, check=True)
    assert rc == 1 and "results/nowhere: no such study" in said
    page.write_text("<!-- results: nonsense -->\n<!-- /results -->\n")
    assert "names no kind" in _generate(site, check=True)[1]


@pytest.mark.slow
def test_the_repository_pages_match_the_repository_data():
    """What CI checks: every generated part of README and docs/results equals what results/ gives."""
    done = subprocess.run([sys.executable, "-m", "launch", "results", "--check"], cwd=ROOT, capture_output=True,
                          text=True, timeout=600)
    assert done.returncode == 0, done.stdout + done.stderr


def _tune_record(arm: str, chosen: float | None) -> dict:
    trials = [{"value": v, "seed": 10000 + i, "metric": m, "updates": u, "end": e}
              for i, (v, m, u, e) in enumerate([(0.02, 0.2, 384, "stopped by ASHA"), (0.171, 0.0, 1536, "goal"),
                                                (0.5, 0.05, 3072, "budget")])]
    return {"arm": arm, "algo": "avi", "command": "python -m launch tune ladder-hex --arm avi --out /abs/tune-avi",
            "space": {"key": "actors.epsilon", "scale": "log", "low": 0.02, "high": 0.5},
            "search": {"kind": "grid"}, "scheduler": {"metric": "eval/hex-3x3-play/error_rate", "grace_period": 384},
            "seeds": {"tuning": [10000, 10001, 10002], "comparison": [0, 1, 2]}, "budget": {"updates": 3072},
            "trials": trials, "chosen": None if chosen is None else {"value": chosen}}


def test_a_tuned_arm_is_shown_with_every_trial_and_whether_the_study_used_its_value(tmp_path):
    import json

    tune = tmp_path / "tune-avi"
    tune.mkdir()
    (tune / "tune.json").write_text(json.dumps(_tune_record("avi", 0.171)))
    exp = write_experiment(tmp_path / "exp")
    add(exp, "demo", commit=None, machine=None, data_root=tmp_path / "results", tunings=(tune,))
    assert (tmp_path / "results" / "demo" / "tune-avi.json").is_file()
    (tmp_path / "docs" / "results").mkdir(parents=True)
    page = tmp_path / "docs" / "results" / "demo.md"
    page.write_text("<!-- results: tuning study=demo -->\n<!-- /results -->\n")
    assert _generate(tmp_path, check=False)[0] == 0
    text = page.read_text()
    assert "| 0.02 | 10000 | 0.200 | 384 | stopped by ASHA |" in text and "| 0.171 | 10001 | 0.000 | 1,536 | goal |" in text
    # The conftest's trials ran at epsilon 0.3, not the chosen 0.171: the page says so.
    assert "chosen `actors.epsilon = 0.171`; the study's avi trials ran with `actors.epsilon = 0.3` (not the chosen" in text
    with pytest.raises(ValueError, match="no tune.json"):
        add(exp, "demo", commit=None, machine=None, data_root=tmp_path / "results", tunings=(tmp_path,))


def test_studies_joined_by_a_plus_draw_as_one_and_a_trial_in_both_is_refused(tmp_path):
    """An arm run later beside a study's trials (its own experiment, the same boards and
    seeds) is drawn in the same table as they are: ``study=a+b``."""
    from launch.results.data import load_study

    data = tmp_path / "results"
    avi = {k: v for k, v in ERROR_RATES.items() if k[1] == "avi"}
    az = {k: v for k, v in ERROR_RATES.items() if k[1] == "az"}
    add(write_experiment(tmp_path / "exp-avi", rates=avi), "first", commit=None, machine=None, data_root=data)
    add(write_experiment(tmp_path / "exp-az", rates=az), "later", commit=None, machine=None, data_root=data)
    add(write_experiment(tmp_path / "exp-all"), "whole", commit=None, machine=None, data_root=data)
    (tmp_path / "docs" / "results").mkdir(parents=True)
    page = tmp_path / "docs" / "results" / "joined.md"
    page.write_text("<!-- results: time-to-goal study=first+later -->\n<!-- /results -->\n\n"
                    "<!-- results: time-to-goal study=whole -->\n<!-- /results -->\n\n"
                    "<!-- results: provenance study=first+later -->\n<!-- /results -->\n")
    (tmp_path / "docs" / "results" / "index.md").write_text("<!-- results: index -->\n<!-- /results -->\n")
    assert generate(root=tmp_path, data_root=data, check=False, out=io.StringIO()) == 0
    index = (tmp_path / "docs" / "results" / "index.md").read_text()
    assert re.search(r"\| `later` \|.*\| \[joined\]\(joined.md\) \|", index)  # a part links to its page
    joined, whole, provenance = re.findall(r"-->\n(.*?)<!-- /results -->", page.read_text(), re.S)
    assert joined == whole and "| hex 3x3 | AVI | 3 | 3 of 3 |" in joined and "| hex 3x3 | AlphaZero S=32 |" in joined
    assert "`results/first/study.json`" in provenance and "`results/later/study.json`" in provenance
    assert load_study("first+later", data).arms() == ["avi", "az"]
    with pytest.raises(ValueError, match=r"hex 3x3, arm avi, seed 0 is in first and whole"):
        load_study("first+whole", data)


def test_a_study_enters_with_its_ended_tuning_steps_before_its_trials(tmp_path):
    """A study tunes each arm before its trials (a spec's ``tune``): the tuning reports are
    data a page shows while no trial has run; with neither, ``add`` refuses."""
    import json

    exp = write_experiment(tmp_path / "exp", rates={})
    with pytest.raises(ValueError, match="no trial has metrics yet and no tuning step has ended"):
        add(exp, "early", commit=None, machine=None, data_root=tmp_path / "results")
    step = exp / "tuning" / "3x3-avi"
    step.mkdir(parents=True)
    (step / "tune.json").write_text(json.dumps(_tune_record("avi", 0.171) | {"instance": "3x3"}))
    add(exp, "early", commit=None, machine=None, data_root=tmp_path / "results")
    (tmp_path / "docs" / "results").mkdir(parents=True)
    page = tmp_path / "docs" / "results" / "early.md"
    page.write_text("<!-- results: tuning study=early -->\n<!-- /results -->\n\n"
                    "<!-- results: provenance study=early -->\n<!-- /results -->\n\n"
                    "<!-- results: index -->\n<!-- /results -->\n\n<!-- results: headline -->\n<!-- /results -->\n")
    assert _generate(tmp_path, check=False)[0] == 0
    text = page.read_text()
    assert "chosen `actors.epsilon = 0.171`; no trial of avi on 3x3 has data yet." in text
    assert "No trial of this study has data yet." in text
    assert "| `early` | `ladder-hex` (small-held) | – | – | 0 of 0 | no trial yet |" in text
    assert "`early` (" not in text  # no held goal to report: no headline row


def test_a_range_extended_past_its_chosen_end_is_shown_after_its_step_with_the_choice_over_both(tmp_path):
    import json

    exp = write_experiment(tmp_path / "exp")
    base = _tune_record("avi", 0.5) | {"instance": "3x3"}
    base["chosen"] |= {"trial": "t", "metric": 0.05}
    wider = _tune_record("avi", 0.708) | {"instance": "3x3", "extends": {"step": "3x3-avi", "chosen": base["chosen"]},
                                          "chosen_overall": {"value": 0.708}}
    wider["space"] |= {"low": 0.708, "high": 1.0, "limits": [0.001, 1.0]}
    wider["trials"] = [{"value": 0.708, "seed": 10003, "metric": 0.01, "updates": 3072, "end": "budget"},
                       {"value": 1.0, "seed": 10004, "metric": 0.3, "updates": 768, "end": "stopped by ASHA"}]
    for name, record in (("3x3-avi", base), ("3x3-avi-beyond", wider)):
        (exp / "tuning" / name).mkdir(parents=True)
        (exp / "tuning" / name / "tune.json").write_text(json.dumps(record))
    add(exp, "demo", commit=None, machine=None, data_root=tmp_path / "results")
    assert {p.name for p in (tmp_path / "results" / "demo").glob("tune-*")} == {"tune-3x3-avi.json",
                                                                               "tune-3x3-avi-beyond.json"}
    (tmp_path / "docs" / "results").mkdir(parents=True)
    page = tmp_path / "docs" / "results" / "demo.md"
    page.write_text("<!-- results: tuning study=demo -->\n<!-- /results -->\n")
    assert _generate(tmp_path, check=False)[0] == 0
    text = page.read_text()
    step, past = text.index("**avi** on 3x3 (avi)"), text.index("**avi** on 3x3, past the chosen end of its first range (0.5)")
    assert step < text.index("chosen `actors.epsilon = 0.5`, an end of the values tried: the values past it follow.") < past
    assert "| 1 | 10004 | 0.300 | 768 | stopped by ASHA |" in text[past:]
    assert "chosen over both ranges `actors.epsilon = 0.708`; the study's avi trials on 3x3 ran with" in text[past:]
