"""The pre-commit hook (.pre-commit-hooks.yaml, run by the real `pre-commit` package in a
temporary repository) and the GitHub Action (action.yml; its check step, ci/action-check.sh,
run as the action runs it)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import yaml
from cli_helpers import NOIRQ_WAKE, REPO, write_driver

BIN = Path(sys.executable).parent
CLEAN = "int foo_add(int a, int b)\n{\n\treturn a + b;\n}\n"


def _git(repo: Path, *args: str) -> str:
    return subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@example.com", *args],
        cwd=repo, check=True, capture_output=True, text=True,
    ).stdout  # fmt: skip


def _repo(tmp: Path) -> Path:
    repo = tmp / "linux"
    repo.mkdir()
    _git(repo, "init", "-q")
    return repo


def test_pre_commit_hook_with_the_real_pre_commit(tmp_path):
    hooks = yaml.safe_load((REPO / ".pre-commit-hooks.yaml").read_text())
    assert [h["id"] for h in hooks] == ["dpmlens", "dpmlens-files"]
    assert hooks[0]["types"] == ["c"] and hooks[0]["entry"] == "dpmlens check --diff HEAD"
    repo = _repo(tmp_path)
    write_driver(repo / "drivers" / "foo.c")
    (repo / "drivers" / "clean.c").write_text(CLEAN)
    _git(repo, "add", ".")
    env = {**os.environ, "PRE_COMMIT_HOME": str(tmp_path / "pre-commit-home"),
           "PATH": f"{BIN}{os.pathsep}{os.environ['PATH']}"}  # fmt: skip
    # try-repo installs this checkout (its working tree, staged or not) as the hook repository:
    # `pip install .` at the top, into pre-commit's own virtualenv.
    def hook(*files: str) -> subprocess.CompletedProcess[str]:
        command = [str(BIN / "pre-commit"), "try-repo", str(REPO), "dpmlens",
                   *(["--files", *files] if files else ["--all-files"])]  # fmt: skip
        return subprocess.run(command, cwd=repo, env=env, capture_output=True, text=True,
                              timeout=900, check=False)  # fmt: skip

    done = hook()
    assert done.returncode == 1, done.stdout + done.stderr
    assert "dpmlens (driver power-management review)" in done.stdout
    assert "drivers/foo.c:11:2: warning: enable_irq_wake()" in done.stdout
    assert "[wake-setup-in-noirq]" in done.stdout
    done = hook("drivers/clean.c")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "Passed" in done.stdout


def _action_step(name: str) -> dict:
    action = yaml.safe_load((REPO / "action.yml").read_text())
    assert action["runs"]["using"] == "composite"
    return next(s for s in action["runs"]["steps"] if s.get("name") == name)


def _run_check(repo: Path, tmp: Path, **env: str) -> tuple[subprocess.CompletedProcess[str], dict]:
    output = tmp / "github-output"
    output.write_text("")
    runner = tmp / "runner"
    runner.mkdir(exist_ok=True)
    step = _action_step("Check the changed C files")
    assert step["run"] == 'bash "$GITHUB_ACTION_PATH/ci/action-check.sh"'
    assert set(step["env"]) == {"DPMLENS_BASE", "DPMLENS_PATHS", "DPMLENS_INTRODUCED_ONLY",
                                "DPMLENS_CHANGED_LINES_ONLY", "DPMLENS_FAIL_LEVEL",
                                "DPMLENS_ARGS"}  # fmt: skip
    full = {**os.environ, "GITHUB_ACTION_PATH": str(REPO), "GITHUB_OUTPUT": str(output),
            "RUNNER_TEMP": str(runner), "DPMLENS": str(BIN / "dpmlens"),
            "XDG_CACHE_HOME": str(tmp / "cache"), **env}  # fmt: skip
    done = subprocess.run(["bash", "-c", step["run"]], cwd=repo, env=full, capture_output=True,
                          text=True, timeout=300, check=False)  # fmt: skip
    outputs = dict(line.split("=", 1) for line in output.read_text().splitlines())
    return done, outputs


def test_action_checks_only_the_changed_files_and_writes_sarif(tmp_path):
    repo = _repo(tmp_path)
    write_driver(repo / "drivers" / "old.c", NOIRQ_WAKE.replace("foo", "old"))
    _git(repo, "add", ".")
    _git(repo, "commit", "-qm", "base")
    base = _git(repo, "rev-parse", "HEAD").strip()
    write_driver(repo / "drivers" / "new.c")
    (repo / "drivers" / "clean.c").write_text(CLEAN)
    (repo / "README").write_text("not C\n")
    _git(repo, "add", ".")
    _git(repo, "commit", "-qm", "change")

    done, out = _run_check(repo, tmp_path, DPMLENS_BASE=base, DPMLENS_FAIL_LEVEL="warning")
    assert done.returncode == 0, done.stderr  # the verdict is the last step's, after upload
    assert out["files"] == "2" and out["status"] == "1"
    assert "::warning file=drivers/new.c,line=11" in done.stdout
    assert "old.c" not in done.stdout  # unchanged: not checked
    sarif = json.loads(Path(out["sarif"]).read_text())
    results = sarif["runs"][0]["results"]
    assert {r["ruleId"] for r in results} >= {"wake-setup-in-noirq"}
    uris = {r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] for r in results}
    assert uris == {"drivers/new.c"}
    fail = _action_step("Fail on findings")
    assert fail["if"] == "steps.check.outputs.status != '0'"
    upload = _action_step("Upload SARIF")
    assert upload["uses"].startswith("github/codeql-action/upload-sarif@")
    assert upload["with"]["sarif_file"] == "${{ steps.check.outputs.sarif }}"

    # fail-level none: SARIF and annotations, status 0.
    done, out = _run_check(repo, tmp_path, DPMLENS_BASE=base, DPMLENS_FAIL_LEVEL="none")
    assert out["status"] == "0" and "::warning file=drivers/new.c" in done.stdout


def test_action_without_changed_c_files_and_on_a_first_push(tmp_path):
    repo = _repo(tmp_path)
    write_driver(repo / "drivers" / "old.c")
    _git(repo, "add", ".")
    _git(repo, "commit", "-qm", "base")
    head = _git(repo, "rev-parse", "HEAD").strip()
    done, out = _run_check(repo, tmp_path, DPMLENS_BASE=head)
    assert done.returncode == 0 and out["files"] == "0" and out["status"] == "0"
    assert json.loads(Path(out["sarif"]).read_text())["runs"][0]["results"] == []
    # A first push: github.event.before is all zeros; every C file is checked.
    done, out = _run_check(repo, tmp_path, DPMLENS_BASE="0" * 40)
    assert out["files"] == "1" and out["status"] == "1"
    assert "no base revision to diff against" in done.stdout
