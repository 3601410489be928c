"""Shared test data for the printer tests: a run with a chained finding, a fix and an error."""

from __future__ import annotations

from dpmlens.core.findings import ChainStep, Finding, Fix, Severity, Span, TextEdit
from dpmlens.engine.check import CheckRun
from dpmlens.engine.walk import InputError
from dpmlens.rules.loader import Rule

PATH = "drivers/misc/acme,als.c"  # a comma: printers must escape it where the format needs to


def rules() -> list[Rule]:
    return [
        Rule(
            id="wake-setup-in-noirq",
            kernel_type="PM_WAKE_SETUP_IN_NOIRQ",
            severity=Severity.WARNING,
            title="Wake-source setup in a noirq callback",
            message="{callee}() in the {phase} callback",
            note="Arm wakeup in `.suspend`.",
            url="https://docs.kernel.org/power/suspend-and-interrupts.html",
            match={"kind": "call-in-phase"},
        ),
        Rule(
            id="msleep-under-20ms",
            kernel_type="PM_MSLEEP",
            severity=Severity.WARNING,
            title="Short msleep() in a PM path",
            message="msleep({ms}) can sleep 20 ms",
            note="Use `fsleep()`.",
            url="https://docs.kernel.org/timers/delay_sleep_functions.html",
            match={"kind": "delay"},
        ),
        Rule(
            id="async-suspend-not-enabled",
            kernel_type="PM_ASYNC_SUSPEND",
            severity=Severity.INFO,
            title="Async suspend not enabled",
            message="no async suspend",
            note="Call `device_enable_async_suspend()`.",
            url="https://docs.kernel.org/driver-api/pm/devices.html",
            match={"kind": "driver"},
        ),
    ]


def wake_finding() -> Finding:
    return Finding(
        rule="wake-setup-in-noirq",
        kernel_type="PM_WAKE_SETUP_IN_NOIRQ",
        severity=Severity.WARNING,
        path=PATH,
        span=Span(37, 3, 37, 28),
        message="enable_irq_wake() in the suspend_noirq callback acme_suspend_noirq()",
        function="acme_arm_wake",
        phase="suspend_noirq",
        chain=(
            ChainStep("acme_suspend_noirq", PATH, Span(70, 2, 70, 25), "suspend_noirq callback"),
            ChainStep("acme_suspend_noirq", PATH, Span(74, 2, 74, 20), "calls acme_arm_wake()"),
            ChainStep("acme_arm_wake", PATH, Span(37, 3, 37, 28), "calls enable_irq_wake()"),
        ),
    )


def msleep_finding() -> Finding:
    return Finding(
        rule="msleep-under-20ms",
        kernel_type="PM_MSLEEP",
        severity=Severity.WARNING,
        path=PATH,
        span=Span(80, 2, 80, 11),
        message="msleep(2) can sleep 20 ms: use fsleep(2000)",
        function="acme_runtime_resume",
        phase="runtime_resume",
        fixes=(Fix("use fsleep(2000)", (TextEdit(PATH, Span(80, 2, 80, 11), "fsleep(2000)"),)),),
    )


def info_finding() -> Finding:
    return Finding(
        rule="async-suspend-not-enabled",
        kernel_type="PM_ASYNC_SUSPEND",
        severity=Severity.INFO,
        path="drivers/misc/other.c",
        span=Span(5, 1, 5, 10),
        message="platform driver 'other' never enables async suspend",
    )


def sample_run() -> CheckRun:
    findings = sorted([wake_finding(), msleep_finding(), info_finding()], key=Finding.sort_key)
    return CheckRun(
        findings=findings,
        errors=[InputError("drivers/misc/blob.c", "binary file (contains NUL bytes), skipped")],
        files_checked=3,
        files_analyzed=2,
        bytes_checked=4096,
        lines_checked=120,
        elapsed=0.25,
        jobs=2,
        source_lines={(PATH, 37): "\t\tenable_irq_wake(als->irq);", (PATH, 80): "\tmsleep(2);"},
    )
