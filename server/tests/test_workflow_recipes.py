"""The README's kernel-workflow recipes, run against the real tools (issue 23): `b4 prep --check`
on a local prep branch, a just-committed patch piped to `--patch -`, `--diff` with the same
meaning of "introduced" as `--commits`, the pre-commit hook run by the real `pre-commit` from a
local hook repository (online and from a wheelhouse with no index), the Action's check script,
and what `rules explain` / SARIF / baselines say to a person."""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
from pathlib import Path
from urllib.parse import urlparse

import pytest
from cli_helpers import NOIRQ_WAKE, REPO, run_cli, run_process, write_driver

BIN = Path(sys.executable).parent
DRIVER = "drivers/foo.c"

# A helper that arms a wake IRQ, not yet called from any callback; PATCHED wires it into the
# noirq callback: the flagged line (the helper's) is unchanged, the patch's line is the call.
HELPER = """\
#include <linux/interrupt.h>
#include <linux/platform_device.h>
#include <linux/pm.h>

struct foo { int irq; };

static void foo_arm(struct foo *foo)
{
	enable_irq_wake(foo->irq);
}

static int foo_suspend_noirq(struct device *dev)
{
	struct foo *foo = dev_get_drvdata(dev);

	dev_dbg(dev, "%d\\n", foo->irq);
	return 0;
}

static const struct dev_pm_ops foo_pm_ops = {
	NOIRQ_SYSTEM_SLEEP_PM_OPS(foo_suspend_noirq, NULL)
};

static struct platform_driver foo_driver = {
	.driver = { .name = "foo", .pm = pm_sleep_ptr(&foo_pm_ops) },
};
module_platform_driver(foo_driver);
"""
PATCHED = HELPER.replace('\tdev_dbg(dev, "%d\\n", foo->irq);\n', "\tfoo_arm(foo);\n")
WAKE_LINE, CALL_LINE = 9, 16

GIT_ENV = {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.com",
           "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@example.com"}  # fmt: skip


def _git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@example.com",
                           "-c", "init.defaultBranch=master", *args], cwd=repo, check=True,
                          capture_output=True, text=True).stdout  # fmt: skip


def _repo(tmp: Path, text: str = HELPER) -> Path:
    repo = tmp / "linux"
    repo.mkdir()
    _git(repo, "init", "-q")
    write_driver(repo / DRIVER, text)
    _git(repo, "add", ".")
    _git(repo, "commit", "-qm", "base")
    return repo


def _commit(repo: Path, text: str, subject: str) -> None:
    (repo / DRIVER).write_text(text)
    _git(repo, "commit", "-qam", subject)


def _env(tmp: Path, **more: str) -> dict[str, str]:
    return {**os.environ, **GIT_ENV, "HOME": str(tmp / "home"),
            "XDG_CACHE_HOME": str(tmp / "cache"), "XDG_CONFIG_HOME": str(tmp / "config"),
            "PATH": f"{BIN}{os.pathsep}{os.environ['PATH']}", **more}  # fmt: skip


# --- committed patches, checked in place -----------------------------------------------------


def test_a_just_committed_patch_is_checked_in_place(tmp_path: Path) -> None:
    """`git format-patch --stdout -1 | dpmlens check --patch -` right after the commit: the
    before side is the blob of the patch's `index` line, as `git am -3` finds it."""
    repo = _repo(tmp_path)
    _commit(repo, PATCHED, "foo: arm the wake irq in suspend_noirq")
    patch = _git(repo, "format-patch", "--stdout", "-1")
    done = subprocess.run([str(BIN / "dpmlens"), "check", "-f", "checkpatch", "--patch", "-"],
                          input=patch, cwd=repo, capture_output=True, text=True,
                          env=_env(tmp_path), check=False)  # fmt: skip
    assert done.returncode == 1, done.stdout + done.stderr
    assert "PM_PATCH_DOES_NOT_APPLY" not in done.stdout
    assert "WARNING:PM_WAKE_SETUP_IN_NOIRQ: enable_irq_wake() in the suspend_noirq" in done.stdout
    # the flagged line is the helper's, unchanged: the block names the patch's line (the call)
    # and keeps the chain down to the flagged line
    call = next(n for n, line in enumerate(patch.splitlines(), 1) if line == "+\tfoo_arm(foo);")
    assert f"#{call}: FILE: {DRIVER}:{CALL_LINE}:\n+\tfoo_arm(foo);\n" in done.stdout
    assert f"  {DRIVER}:{WAKE_LINE}: enable_irq_wake(foo->irq);" in done.stdout
    assert "#0:" not in done.stdout


def test_an_applied_patch_without_git_is_reverse_applied(tmp_path: Path) -> None:
    """No repository to find the blob in: the tree with the patch reverse-applied is its
    before side. A patch neither applicable nor applied is still one clear error."""
    repo = _repo(tmp_path)
    _commit(repo, PATCHED, "foo: arm the wake irq")
    patch = tmp_path / "0001.patch"
    patch.write_text(_git(repo, "format-patch", "--stdout", "-1"))
    tree = tmp_path / "plain"
    shutil.copytree(repo, tree, ignore=shutil.ignore_patterns(".git"))
    r = run_process("check", "--patch", str(patch), "--tree", str(tree), "-f", "json",
                    cwd=tmp_path)  # fmt: skip
    assert r.code == 1, r.err
    found = json.loads(r.out)["findings"]
    assert [(f["rule"], f["line"]) for f in found] == [("wake-setup-in-noirq", WAKE_LINE)]
    (tree / DRIVER).write_text(HELPER.replace("\treturn 0;", "\treturn 1;"))
    r = run_process("check", "--patch", str(patch), "--tree", str(tree), cwd=tmp_path)
    assert r.code == 2 and "does not apply" in r.err


def test_b4_prep_check_on_a_local_prep_branch(tmp_path: Path) -> None:
    """The README's b4 recipe with the real b4: `b4 prep --check` runs the command once per
    patch of the prep branch, where the series is already committed."""
    if not (BIN / "b4").exists():
        pytest.skip(f"b4 is not installed in {BIN} (it is in server/pyproject.toml's dev extra)")
    repo = _repo(tmp_path)
    env = _env(tmp_path)
    (tmp_path / "home").mkdir()

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(args, cwd=repo, env=env, capture_output=True, text=True,
                              timeout=300, check=False)  # fmt: skip

    assert run("b4", "prep", "-n", "foo-wake").returncode == 0
    _commit(repo, PATCHED, "foo: arm the wake irq in suspend_noirq")
    _commit(repo, PATCHED.replace("struct foo { int irq; };", "struct foo {\n\tint irq;\n};"),
            "foo: one member per line")  # fmt: skip
    _git(repo, "config", "b4.prep-perpatch-check-cmd", "dpmlens check -q -f checkpatch --patch -")
    done = run("b4", "prep", "--check")
    out = done.stdout + done.stderr
    assert done.returncode == 0, out
    assert "PM_PATCH_DOES_NOT_APPLY" not in out and "does not apply" not in out
    first, second = out.split("foo: arm the wake irq in suspend_noirq", 1)[1].split(
        "foo: one member per line")
    assert "dpmlens: WARNING:PM_WAKE_SETUP_IN_NOIRQ" in first
    assert "dpmlens" not in second, out  # -q: nothing printed for a clean patch
    assert "Success: 1, Warning: " in second and "Error: 0" in second


# --- one meaning of "introduced" -----------------------------------------------------------


def test_diff_reports_what_the_change_introduces_not_old_findings_it_edits(
        tmp_path: Path) -> None:  # fmt: skip
    repo = _repo(tmp_path, PATCHED)  # the finding is old: committed
    edited = PATCHED.replace("\tenable_irq_wake(foo->irq);",
                             "\tenable_irq_wake(foo->irq); /* arm */")
    (repo / DRIVER).write_text(edited)
    r = run_process("check", "--diff", "HEAD", DRIVER, cwd=repo)
    assert r.code == 0, r.out + r.err  # the line changed, the finding did not
    assert "wake-setup-in-noirq" not in r.out
    # the same edit plus a new wake call in a noirq callback: only the new one
    (repo / DRIVER).write_text(edited.replace(
        "static int foo_suspend_noirq(struct device *dev)\n{\n",
        "static int foo_suspend_noirq(struct device *dev)\n{\n\tenable_irq_wake(42);\n"))
    r = run_process("check", "--diff", "HEAD", DRIVER, "-f", "json", cwd=repo)
    assert r.code == 1
    found = json.loads(r.out)["findings"]
    assert [(f["rule"], f["line"]) for f in found] == [("wake-setup-in-noirq", 14)]
    # the same comparison as --commits
    _git(repo, "commit", "-qam", "wake 42")
    r = run_process("check", "--commits", "HEAD~1..HEAD", "-f", "json", cwd=repo)
    assert [(f["rule"], f["line"]) for f in json.loads(r.out)["findings"]] == [
        ("wake-setup-in-noirq", 14)]


def test_diff_head_before_the_first_commit(tmp_path: Path) -> None:
    repo = tmp_path / "fresh"
    repo.mkdir()
    _git(repo, "init", "-q")
    write_driver(repo / DRIVER, NOIRQ_WAKE)
    _git(repo, "add", ".")
    r = run_process("check", "--diff", "HEAD", DRIVER, cwd=repo)
    assert r.code == 1 and "[wake-setup-in-noirq]" in r.out, r.err  # every file is new
    r = run_process("check", "--diff", "nosuchrev", DRIVER, cwd=repo)
    assert r.code == 2 and "--diff nosuchrev: unknown git revision" in r.err


def _action(repo: Path, tmp: Path, **env: str) -> tuple[subprocess.CompletedProcess[str], dict]:
    output = tmp / "github-output"
    output.write_text("")
    (tmp / "runner").mkdir(exist_ok=True)
    full = {**_env(tmp), "GITHUB_ACTION_PATH": str(REPO), "GITHUB_OUTPUT": str(output),
            "RUNNER_TEMP": str(tmp / "runner"), "DPMLENS": str(BIN / "dpmlens"), **env}
    done = subprocess.run(["bash", str(REPO / "ci" / "action-check.sh")], cwd=repo, env=full,
                          capture_output=True, text=True, timeout=300, check=False)  # fmt: skip
    return done, dict(line.split("=", 1) for line in output.read_text().splitlines())


def test_action_reports_what_the_pull_request_introduces(tmp_path: Path) -> None:
    repo = _repo(tmp_path, PATCHED)
    base = _git(repo, "rev-parse", "HEAD").strip()
    _commit(repo, PATCHED.replace("\tenable_irq_wake(foo->irq);",
                                  "\tenable_irq_wake(foo->irq); /* arm */"), "comment")
    done, out = _action(repo, tmp_path, DPMLENS_BASE=base)
    assert out["files"] == "1" and out["status"] == "0", done.stdout + done.stderr
    assert "::warning" not in done.stdout
    sarif = json.loads(Path(out["sarif"]).read_text())
    assert sarif["runs"][0]["results"] == []
    # every finding of the changed files, when asked
    done, out = _action(repo, tmp_path, DPMLENS_BASE=base, DPMLENS_INTRODUCED_ONLY="false")
    assert out["status"] == "1" and f"::warning file={DRIVER},line={WAKE_LINE}" in done.stdout


# --- the pre-commit hook, installed as pre-commit installs it ------------------------------


def _hook_repo(tmp: Path) -> tuple[Path, str]:
    """This checkout (tracked and untracked files, as they are) committed in a repository of
    its own: what `repo:` of a .pre-commit-config.yaml points at."""
    hook = tmp / "hookrepo"
    files = subprocess.run(["git", "ls-files", "-co", "--exclude-standard", "-z"], cwd=REPO,
                           capture_output=True, check=True).stdout.decode().split("\0")
    for name in filter(None, files):
        if name.startswith(("server/tests/", "test-fixtures/", "e2e/", "docs/", "extension/")):
            continue
        src = REPO / name
        if src.is_file():
            (hook / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, hook / name)
    _git(hook, "init", "-q")
    _git(hook, "add", ".")
    _git(hook, "commit", "-qm", "snapshot")
    return hook, _git(hook, "rev-parse", "HEAD").strip()


def _pre_commit(repo: Path, env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(BIN / "pre-commit"), *args], cwd=repo, env=env,
                          capture_output=True, text=True, timeout=900, check=False)  # fmt: skip


def _hook_python(home: Path) -> Path:
    (python,) = home.glob("repo*/py_env-*/bin/python")
    return python


def _imports(python: Path, module: str) -> bool:
    return subprocess.run([str(python), "-c", f"import {module}"], capture_output=True,
                          check=False).returncode == 0  # fmt: skip


def test_pre_commit_run_checks_what_the_commit_introduces(tmp_path: Path) -> None:
    hook, rev = _hook_repo(tmp_path)
    repo = _repo(tmp_path, PATCHED)  # an old warning, committed
    (repo / ".pre-commit-config.yaml").write_text(
        f"repos:\n  - repo: {hook}\n    rev: {rev}\n    hooks:\n      - id: dpmlens\n")
    env = _env(tmp_path, PRE_COMMIT_HOME=str(tmp_path / "pc-home"))
    # a comment-only change to the file with the old warning passes
    (repo / DRIVER).write_text(PATCHED.replace("struct foo { int irq; };",
                                               "struct foo { int irq; }; /* the device */"))
    _git(repo, "add", ".")
    done = _pre_commit(repo, env, "run")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "dpmlens (driver power-management review)" in done.stdout and "Passed" in done.stdout
    # a new wake call in a noirq callback is refused, and only it is shown
    (repo / DRIVER).write_text(PATCHED.replace(
        "\tfoo_arm(foo);\n", "\tfoo_arm(foo);\n\tenable_irq_wake(7);\n"))
    _git(repo, "add", ".")
    done = _pre_commit(repo, env, "run")
    assert done.returncode == 1, done.stdout + done.stderr
    assert f"{DRIVER}:{CALL_LINE + 1}:2: warning: enable_irq_wake()" in done.stdout
    assert f"{DRIVER}:{WAKE_LINE}:" not in done.stdout
    # the hook's environment holds what `check` needs, not the server or the trace importers
    python = _hook_python(tmp_path / "pc-home")
    assert _imports(python, "dpmlens.cli") and _imports(python, "tree_sitter_c")
    for extra in ("pygls", "lsprotocol", "perfetto", "google.protobuf"):
        assert not _imports(python, extra), f"{extra} in the hook's environment"


def _index_reachable() -> str | None:
    url = os.environ.get("PIP_INDEX_URL") or "https://pypi.org/simple"
    host = urlparse(url).hostname or "pypi.org"
    try:
        socket.create_connection((host, urlparse(url).port or 443), timeout=5).close()
    except OSError as exc:
        return f"package index {host} unreachable ({exc})"
    return None


def test_pre_commit_installs_the_hook_without_an_index(tmp_path: Path) -> None:
    """Offline, from a wheelhouse (`pip download` once, online): the build backend is pinned,
    so the wheelhouse that holds it and check's dependencies is enough."""
    why = _index_reachable()
    if why:
        pytest.skip(f"offline: {why}; the wheelhouse cannot be filled")
    hook, rev = _hook_repo(tmp_path)
    text = (REPO / "pyproject.toml").read_text()
    backend = text.split('requires = ["', 1)[1].split('"', 1)[0]
    assert backend.startswith("setuptools==")  # pinned
    assert backend in (REPO / "server" / "pyproject.toml").read_text()
    wheels = tmp_path / "wheels"
    done = subprocess.run([sys.executable, "-m", "pip", "download", "-q", "-d", str(wheels),
                           str(hook), backend], capture_output=True, text=True, timeout=900,
                          env={**os.environ, "PIP_CACHE_DIR": str(tmp_path / "pip-cache")},
                          check=False)  # fmt: skip
    assert done.returncode == 0, done.stderr
    repo = _repo(tmp_path, NOIRQ_WAKE)
    (repo / ".pre-commit-config.yaml").write_text(
        f"repos:\n  - repo: {hook}\n    rev: {rev}\n    hooks:\n      - id: dpmlens-files\n")
    env = _env(tmp_path, PRE_COMMIT_HOME=str(tmp_path / "pc-offline"), PIP_NO_INDEX="1",
               PIP_FIND_LINKS=str(wheels), PIP_CACHE_DIR=str(tmp_path / "empty-cache"),
               PIP_INDEX_URL="http://127.0.0.1:9/simple")  # fmt: skip
    done = _pre_commit(repo, env, "run", "--all-files")
    assert done.returncode == 1, done.stdout + done.stderr  # installed, ran, found the old one
    assert "[wake-setup-in-noirq]" in done.stdout
    assert not _imports(_hook_python(tmp_path / "pc-offline"), "pygls")


# --- what a person reads -------------------------------------------------------------------


def test_rule_descriptions_are_rendered_without_placeholders(capsys, tmp_path: Path) -> None:
    from dpmlens.engine.rule_set import load_rule_set

    rules, _ = load_rule_set()
    for rule in rules:
        r = run_cli(capsys, "rules", "explain", rule.id)
        message = [line for line in r.out.splitlines() if line.startswith("Message:")]
        assert all("{" not in line for line in message), (rule.id, message)
    write_driver(tmp_path / "foo.c")
    r = run_cli(capsys, "check", "-f", "sarif", "--fail-level", "none", str(tmp_path))
    for descriptor in json.loads(r.out)["runs"][0]["tool"]["driver"]["rules"]:
        assert "{" not in descriptor["fullDescription"]["text"], descriptor["id"]


def test_a_baseline_that_matches_nothing_here_is_said(capsys, tmp_path: Path) -> None:
    write_driver(tmp_path / "drivers" / "foo.c")
    baseline = tmp_path / "drivers" / "b.json"
    run_cli(capsys, "check", "--write-baseline", str(baseline), str(tmp_path / "drivers"))
    r = run_cli(capsys, "check", "--baseline", str(baseline), str(tmp_path / "drivers"))
    assert r.code == 0 and "matches no file" not in r.err
    moved = tmp_path / "elsewhere" / "b.json"  # its paths are relative to its directory
    moved.parent.mkdir()
    shutil.copy(baseline, moved)
    r = run_cli(capsys, "check", "--baseline", str(moved), str(tmp_path / "drivers"))
    assert r.code == 1
    assert (f"dpmlens: warning: baseline {moved} matches no file under the checked paths"
            in r.err)  # fmt: skip


def test_write_baseline_under_a_file_size_limit_fails_clearly(tmp_path: Path) -> None:
    if shutil.which("prlimit") is None:
        pytest.skip("prlimit (util-linux) is not installed")
    write_driver(tmp_path / "drivers" / "foo.c")
    baseline = tmp_path / "b.json"
    baseline.write_text('{"version": 1, "tool": "dpmlens", "findings": []}\n')
    before = baseline.read_bytes()
    done = subprocess.run(["prlimit", "--fsize=200", str(BIN / "dpmlens"), "check", "--no-cache",
                           "--write-baseline", str(baseline), str(tmp_path / "drivers")],
                          capture_output=True, text=True, check=False)  # fmt: skip
    assert done.returncode == 2, done.stderr
    assert f"{baseline}: cannot write baseline: File too large" in done.stderr
    assert "wrote" not in done.stderr
    assert baseline.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["b.json", "drivers"]  # no temp file
