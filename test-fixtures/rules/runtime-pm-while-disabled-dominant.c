// SPDX-License-Identifier: GPL-2.0
/* runtime-pm-while-disabled: one finding per callback, at its first runtime-PM call; never
 * the rollback; calls through static const ops and subsystem ops structs; dead branches. */
#include <linux/platform_device.h>
#include <linux/pm_runtime.h>

struct qux;

struct qux_soc {
	int (*power_up)(struct qux *qux);
};

struct qux {
	struct device *dev;
	const struct qux_soc *soc;
	void __iomem *base;
};

static int qux_a_power_up(struct qux *qux)
{
	/* expect: runtime-pm-while-disabled */
	return pm_runtime_resume_and_get(qux->dev);
}

static int qux_b_power_up(struct qux *qux)
{
	writel(1, qux->base);
	return 0;
}

static const struct qux_soc qux_a_soc = { .power_up = qux_a_power_up };
static const struct qux_soc qux_b_soc = { .power_up = qux_b_power_up };

static int qux_suspend_noirq(struct device *dev)
{
	struct qux *qux = dev_get_drvdata(dev);
	int ret;

	/* expect: runtime-pm-while-disabled */
	ret = pm_runtime_get_sync(dev);
	if (ret < 0) {
		/* rolls back the get: not a finding of its own */
		/* ok: runtime-pm-while-disabled */
		pm_runtime_put_noidle(dev);
		return ret;
	}
	/* only runs once the first get succeeded */
	/* ok: runtime-pm-while-disabled */
	ret = pm_runtime_resume_and_get(dev);
	writel(0, qux->base);
	/* ok: runtime-pm-while-disabled */
	pm_runtime_put(dev);
	return 0;
}

static void qux_set_power(struct qux *qux, bool on)
{
	if (on) {
		writel(1, qux->base);
	} else {
		/* only reached with on = false, from .resume */
		/* ok: runtime-pm-while-disabled */
		pm_runtime_put_sync(qux->dev);
	}
}

static int qux_resume_noirq(struct device *dev)
{
	struct qux *qux = dev_get_drvdata(dev);

	qux_set_power(qux, true);
	return qux->soc->power_up(qux);
}

static int qux_resume(struct device *dev)
{
	qux_set_power(dev_get_drvdata(dev), false);
	return 0;
}

static int qux_suspend_late(struct device *dev)
{
	/* a put nothing relies on: it only drops a count (harmless) */
	/* ok: runtime-pm-while-disabled */
	pm_runtime_put_sync(dev);
	return 0;
}

static int qux_resume_early(struct device *dev)
{
	return 0;
}

static const struct dev_pm_ops qux_pm_ops = {
	NOIRQ_SYSTEM_SLEEP_PM_OPS(qux_suspend_noirq, qux_resume_noirq)
	SYSTEM_SLEEP_PM_OPS(NULL, qux_resume)
	LATE_SYSTEM_SLEEP_PM_OPS(qux_suspend_late, qux_resume_early)
};

/* A thunderbolt-style connection manager: the subsystem calls .resume_noirq in resume_noirq */
static int qux_cm_resume_noirq(struct tb *tb)
{
	/* expect: runtime-pm-while-disabled */
	pm_runtime_get_sync(&tb->dev);
	return 0;
}

static const struct tb_cm_ops qux_cm_ops = {
	.resume_noirq = qux_cm_resume_noirq,
};

static struct platform_driver qux_driver = {
	.driver = {
		.name = "qux",
		.pm = pm_sleep_ptr(&qux_pm_ops),
	},
};
module_platform_driver(qux_driver);
