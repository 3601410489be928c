// SPDX-License-Identifier: GPL-2.0
/*
 * Severity by who pays (rules/tables/severity-policy.yaml): a short msleep() that a
 * runtime-PM callback reaches is paid on every runtime resume (each stream start after
 * autosuspend): a warning. The same sleep once per system resume costs a few ms: info.
 */
#include <linux/delay.h>
#include <linux/pm_runtime.h>

struct codec {
	void __iomem *regs;
};

static void codec_power_up(struct codec *c)
{
	writel(1, c->regs);
	/* expect: msleep-under-20ms(quiet) */
	msleep(1);
	writel(3, c->regs);
}

static int codec_runtime_resume(struct device *dev)
{
	codec_power_up(dev_get_drvdata(dev));
	return 0;
}

static int codec_runtime_suspend(struct device *dev)
{
	struct codec *c = dev_get_drvdata(dev);

	writel(0, c->regs);
	return 0;
}

static int codec_resume(struct device *dev)
{
	struct codec *c = dev_get_drvdata(dev);

	codec_power_up(c);
	writel(7, c->regs);
	/* expect: msleep-under-20ms(quiet) */
	msleep(2);
	return 0;
}

static const struct dev_pm_ops codec_pm_ops = {
	SET_SYSTEM_SLEEP_PM_OPS(NULL, codec_resume)
	SET_RUNTIME_PM_OPS(codec_runtime_suspend, codec_runtime_resume, NULL)
};
