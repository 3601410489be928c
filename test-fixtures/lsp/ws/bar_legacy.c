// SPDX-License-Identifier: GPL-2.0
/* dpmlens LSP fixture: deprecated macro and a pm_runtime_get_sync() leak, both with fixes. */
#include <linux/module.h>
#include <linux/platform_device.h>
#include <linux/pm.h>
#include <linux/pm_runtime.h>

struct bar {
	struct device *dev;
	void __iomem *base;
};

static int bar_read(struct bar *bar, u32 *val)
{
	int ret;

	ret = pm_runtime_get_sync(bar->dev);
	if (ret < 0)
		return ret;
	*val = readl(bar->base);
	pm_runtime_put(bar->dev);
	return 0;
}

static int __maybe_unused bar_suspend(struct device *dev)
{
	return 0;
}

static int __maybe_unused bar_resume(struct device *dev)
{
	return 0;
}

static SIMPLE_DEV_PM_OPS(bar_pm_ops, bar_suspend, bar_resume);

static struct platform_driver bar_driver = {
	.driver = {
		.name = "bar",
		.pm = &bar_pm_ops,
	},
};
module_platform_driver(bar_driver);
