// SPDX-License-Identifier: GPL-2.0
/* runtime-pm-while-disabled: a call through a function pointer of match data reaches the
 * functions the file's match-data structs set, `const` or not (issue 20). */
#include <linux/of.h>
#include <linux/platform_device.h>
#include <linux/pm_runtime.h>

struct phyc;

struct phyc_soc {
	int (*power_on)(struct phyc *p);
	u32 lanes;
};

struct phyc {
	struct device *dev;
	struct device *ref;
	const struct phyc_soc *soc;
	void __iomem *base;
};

static int phyc_v1_power_on(struct phyc *p)
{
	writel(1, p->base);
	return 0;
}

static int phyc_v2_power_on(struct phyc *p)
{
	/* expect: runtime-pm-while-disabled */
	return pm_runtime_resume_and_get(p->ref);
}

/* not const, but handed out as match data: drivers read it, never write it */
static struct phyc_soc phyc_v1 = {
	.power_on = phyc_v1_power_on,
	.lanes = 1,
};

static struct phyc_soc phyc_v2 = {
	.power_on = phyc_v2_power_on,
	.lanes = 2,
};

static int phyc_resume_noirq(struct device *dev)
{
	struct phyc *p = dev_get_drvdata(dev);

	return p->soc->power_on(p);
}

static const struct dev_pm_ops phyc_pm_ops = {
	NOIRQ_SYSTEM_SLEEP_PM_OPS(NULL, phyc_resume_noirq)
};

static int phyc_probe(struct platform_device *pdev)
{
	struct phyc *p = devm_kzalloc(&pdev->dev, sizeof(*p), GFP_KERNEL);

	if (!p)
		return -ENOMEM;
	p->soc = of_device_get_match_data(&pdev->dev);
	p->dev = &pdev->dev;
	platform_set_drvdata(pdev, p);
	return 0;
}

static const struct of_device_id phyc_of_match[] = {
	{ .compatible = "acme,phyc-v1", .data = &phyc_v1 },
	{ .compatible = "acme,phyc-v2", .data = &phyc_v2 },
	{ }
};

static struct platform_driver phyc_driver = {
	.probe = phyc_probe,
	.driver = {
		.name = "phyc",
		.of_match_table = phyc_of_match,
		.pm = pm_sleep_ptr(&phyc_pm_ops),
	},
};
module_platform_driver(phyc_driver);
