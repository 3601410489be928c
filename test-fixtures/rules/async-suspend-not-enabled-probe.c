// SPDX-License-Identifier: GPL-2.0
/* The same driver shape, but probe (through a helper) enables async suspend. */
#include <linux/clk.h>
#include <linux/platform_device.h>

struct pwrd {
	struct clk *clk;
};

static int pwrd_suspend(struct device *dev)
{
	struct pwrd *p = dev_get_drvdata(dev);

	clk_disable_unprepare(p->clk);
	return 0;
}

static int pwrd_resume(struct device *dev)
{
	struct pwrd *p = dev_get_drvdata(dev);

	return clk_prepare_enable(p->clk);
}

static DEFINE_SIMPLE_DEV_PM_OPS(pwrd_pm_ops, pwrd_suspend, pwrd_resume);

static int pwrd_setup(struct device *dev)
{
	device_enable_async_suspend(dev);
	return 0;
}

static int pwrd_probe(struct platform_device *pdev)
{
	return pwrd_setup(&pdev->dev);
}

/* ok: async-suspend-not-enabled */
static struct platform_driver pwrd_driver = {
	.probe = pwrd_probe,
	.driver = {
		.name = "pwrd",
		.pm = pm_sleep_ptr(&pwrd_pm_ops),
	},
};
