// SPDX-License-Identifier: GPL-2.0
/* async-suspend-not-enabled: a platform driver with real sleep work, synchronous. */
#include <linux/clk.h>
#include <linux/platform_device.h>
#include <linux/regulator/consumer.h>

struct pwrc {
	struct clk *clk;
	struct regulator *vdd;
};

static int pwrc_suspend(struct device *dev)
{
	struct pwrc *p = dev_get_drvdata(dev);

	clk_disable_unprepare(p->clk);
	return regulator_disable(p->vdd);
}

static int pwrc_resume(struct device *dev)
{
	struct pwrc *p = dev_get_drvdata(dev);
	int ret;

	ret = regulator_enable(p->vdd);
	if (ret)
		return ret;
	return clk_prepare_enable(p->clk);
}

static DEFINE_SIMPLE_DEV_PM_OPS(pwrc_pm_ops, pwrc_suspend, pwrc_resume);

static int pwrc_probe(struct platform_device *pdev)
{
	struct pwrc *p;

	p = devm_kzalloc(&pdev->dev, sizeof(*p), GFP_KERNEL);
	if (!p)
		return -ENOMEM;
	platform_set_drvdata(pdev, p);
	return 0;
}

/* expect: async-suspend-not-enabled */
static struct platform_driver pwrc_driver = {
	.probe = pwrc_probe,
	.driver = {
		.name = "pwrc",
		.pm = pm_sleep_ptr(&pwrc_pm_ops),
	},
};
module_platform_driver(pwrc_driver);
