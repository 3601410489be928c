// SPDX-License-Identifier: GPL-2.0
/* runtime-pm-while-disabled: a power-up helper shared with probe does `pm_runtime_enable();
 * pm_runtime_get_sync();`, and resume_noirq reaches it through a function pointer of the OF
 * match data (`pcie->soc->power_up`, a struct held in another struct). The enable only takes
 * back the driver's own pm_runtime_disable() of suspend_noirq (its power-down helper): the
 * PM core's __pm_runtime_disable() of suspend_late still holds until resume_early, so the
 * get powers nothing up (issue 31, pcie-mediatek-gen3). Where nothing on the way down
 * disables runtime PM, the enable really enables it and the get works: not reported. */
#include <linux/clk.h>
#include <linux/of.h>
#include <linux/platform_device.h>
#include <linux/pm_runtime.h>

struct hostc;

struct hostc_pdata {
	int (*power_up)(struct hostc *h);
	int lanes;
};

struct hostc {
	struct device *dev;
	const struct hostc_pdata *soc;
	struct clk *clk;
};

static int hostc_v1_power_up(struct hostc *h)
{
	struct device *dev = h->dev;
	int err;

	/* the probe reaches it too, and the driver has no .remove: */
	/* expect: runtime-pm-enable-not-undone */
	pm_runtime_enable(dev);
	/* expect: runtime-pm-while-disabled(info) */
	pm_runtime_get_sync(dev);
	err = clk_prepare_enable(h->clk);
	if (err) {
		pm_runtime_put_sync(dev);
		pm_runtime_disable(dev);
	}
	return err;
}

static int hostc_v2_power_up(struct hostc *h)
{
	pm_runtime_enable(h->dev);
	/* reported once per callback: the first power-up the walk reaches */
	/* ok: runtime-pm-while-disabled */
	pm_runtime_get_sync(h->dev);
	return clk_prepare_enable(h->clk);
}

static void hostc_power_down(struct hostc *h)
{
	clk_disable_unprepare(h->clk);
	pm_runtime_put_sync(h->dev);
	pm_runtime_disable(h->dev);
}

static int hostc_suspend_noirq(struct device *dev)
{
	struct hostc *h = dev_get_drvdata(dev);

	hostc_power_down(h);
	return 0;
}

static int hostc_resume_noirq(struct device *dev)
{
	struct hostc *h = dev_get_drvdata(dev);

	return h->soc->power_up(h);
}

static const struct dev_pm_ops hostc_pm_ops = {
	NOIRQ_SYSTEM_SLEEP_PM_OPS(hostc_suspend_noirq, hostc_resume_noirq)
};

static const struct hostc_pdata hostc_v1 = {
	.power_up = hostc_v1_power_up,
	.lanes = 1,
};

static const struct hostc_pdata hostc_v2 = {
	.power_up = hostc_v2_power_up,
	.lanes = 2,
};

static int hostc_probe(struct platform_device *pdev)
{
	struct hostc *h = devm_kzalloc(&pdev->dev, sizeof(*h), GFP_KERNEL);

	if (!h)
		return -ENOMEM;
	h->dev = &pdev->dev;
	h->soc = device_get_match_data(&pdev->dev);
	platform_set_drvdata(pdev, h);
	return h->soc->power_up(h);
}

static const struct of_device_id hostc_of_match[] = {
	{ .compatible = "acme,hostc-v1", .data = &hostc_v1 },
	{ .compatible = "acme,hostc-v2", .data = &hostc_v2 },
	{ }
};

static struct platform_driver hostc_driver = {
	.probe = hostc_probe,
	.driver = {
		.name = "hostc",
		.of_match_table = hostc_of_match,
		.pm = pm_sleep_ptr(&hostc_pm_ops),
	},
};
module_platform_driver(hostc_driver);

/* The same power-up with no disable on the way down: the enable drops the PM core's
 * disable_depth to 0, runtime PM works again, and the get powers the device up. */
struct bridge {
	struct device *dev;
	struct clk *clk;
};

static int bridge_power_up(struct bridge *b)
{
	pm_runtime_enable(b->dev);
	/* ok: runtime-pm-while-disabled */
	pm_runtime_get_sync(b->dev);
	return clk_prepare_enable(b->clk);
}

static int bridge_suspend_noirq(struct device *dev)
{
	struct bridge *b = dev_get_drvdata(dev);

	clk_disable_unprepare(b->clk);
	return 0;
}

static int bridge_resume_noirq(struct device *dev)
{
	return bridge_power_up(dev_get_drvdata(dev));
}

static const struct dev_pm_ops bridge_pm_ops = {
	NOIRQ_SYSTEM_SLEEP_PM_OPS(bridge_suspend_noirq, bridge_resume_noirq)
};

static struct platform_driver bridge_driver = {
	.driver = {
		.name = "bridge",
		.pm = pm_sleep_ptr(&bridge_pm_ops),
	},
};
module_platform_driver(bridge_driver);
