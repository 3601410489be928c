// SPDX-License-Identifier: GPL-2.0
/*
 * Severity by cost and context (rules/tables/severity-policy.yaml): a busy-wait on every
 * runtime transition, or a long one (>= 50 ms) once per system sleep, is a warning; a short
 * one once per system sleep is info with its cost stated; a wait in a subsystem op the
 * callback merely reaches (`.fb_set_par`) is info; hibernation only: lower still.
 */
#include <linux/delay.h>
#include <linux/fb.h>

struct card {
	void __iomem *regs;
};

static int card_set_par(struct fb_info *info)
{
	struct card *c = info->par;

	writel(1, c->regs);
	/* expect: busy-wait-in-pm-callback(quiet) */
	/* ok: delay-beyond-spec */
	mdelay(60);
	return 0;
}

static const struct fb_ops card_fb_ops = {
	.owner = THIS_MODULE,
	.fb_set_par = card_set_par,
};

static int card_suspend(struct device *dev)
{
	struct card *c = dev_get_drvdata(dev);

	writel(0, c->regs);
	/* expect: busy-wait-in-pm-callback(warning) */
	/* ok: delay-beyond-spec */
	mdelay(60);
	return 0;
}

static int card_resume(struct device *dev)
{
	struct fb_info *info = dev_get_drvdata(dev);
	struct card *c = info->par;

	writel(2, c->regs);
	/* expect: busy-wait-in-pm-callback(quiet) */
	/* ok: delay-beyond-spec */
	mdelay(20);
	card_set_par(info);
	return 0;
}

static int card_runtime_suspend(struct device *dev)
{
	struct card *c = dev_get_drvdata(dev);

	writel(4, c->regs);
	/* expect: busy-wait-in-pm-callback(warning) */
	mdelay(10);
	return 0;
}

static int card_poweroff(struct device *dev)
{
	struct card *c = dev_get_drvdata(dev);

	writel(5, c->regs);
	/* expect: busy-wait-in-pm-callback(quiet) */
	/* ok: delay-beyond-spec */
	mdelay(30);
	return 0;
}

static const struct dev_pm_ops card_pm_ops = {
	.suspend = card_suspend,
	.resume = card_resume,
	.poweroff = card_poweroff,
	.runtime_suspend = card_runtime_suspend,
};
