"""``da.config``: settings change how the pipeline runs, never what it computes."""

from __future__ import annotations

import importlib
from typing import Any

import numpy as np
import pytest

import dualarr as da
import dualarr.ad.extraction as extraction
import dualarr.ad.share_to_let as share_to_let

pipeline = importlib.import_module("dualarr.pipeline")  # da.pipeline is the function


def _chain(x: Any) -> Any:
    return da.sum(da.sin(x) * x + 1.0)


def _counting_checks(monkeypatch: pytest.MonkeyPatch) -> dict[str, int]:
    calls = {"bot normal": 0, "extracted": 0, "let program": 0}

    def counted(name: str, check: Any) -> Any:
        def run(*args: Any) -> None:
            calls[name] += 1
            check(*args)

        return run

    monkeypatch.setattr(
        pipeline, "check_bot_normal", counted("bot normal", pipeline.check_bot_normal)
    )
    monkeypatch.setattr(
        extraction, "check_extracted", counted("extracted", extraction.check_extracted)
    )
    monkeypatch.setattr(
        share_to_let, "check_let_program", counted("let program", share_to_let.check_let_program)
    )
    return calls


@pytest.mark.parametrize("on", [True, False])
def test_check_stages_runs_each_stage_check_once_or_never(
    monkeypatch: pytest.MonkeyPatch, on: bool
) -> None:
    calls = _counting_checks(monkeypatch)
    x = np.linspace(0.1, 1.0, 5)
    with da.config.checking_stages(on):
        gradient = da.grad(_chain)(x)
    np.testing.assert_allclose(gradient, np.cos(x) * x + np.sin(x), rtol=1e-12)
    assert calls == dict.fromkeys(calls, 1 if on else 0)


def test_checking_stages_restores_the_setting() -> None:
    before = da.config.check_stages
    with da.config.checking_stages(not before):
        assert da.config.check_stages is (not before)
    assert da.config.check_stages is before


def test_update_sets_a_known_setting() -> None:
    before = da.config.check_stages
    try:
        da.config.update("check_stages", not before)
        assert da.config.check_stages is (not before)
    finally:
        da.config.update("check_stages", before)


def test_update_refuses_an_unknown_name_or_a_non_bool() -> None:
    with pytest.raises(da.DualarrError, match=r"unknown setting 'check_stage'.*check_stages"):
        da.config.update("check_stage", True)
    with pytest.raises(da.DualarrError, match="check_stages takes True or False, got 1"):
        da.config.update("check_stages", 1)
