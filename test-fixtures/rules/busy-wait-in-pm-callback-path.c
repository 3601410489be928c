// SPDX-License-Identifier: GPL-2.0
/* busy-wait-in-pm-callback: two mdelay(100) on one power-up path, reached from resume_noirq
 * through a function pointer of the OF match data (issue 31, pcie-mediatek-gen3's EN7581
 * power-up): each is a warning that gives the path's total (200 ms), and the second is not
 * "when `!(err)`": getting past an error exit is the success path. delay-beyond-spec does not
 * repeat the busy-waits as hints of its own; the path's sleep (msleep(100), the PCIe
 * T_PVPERL) is at its spec minimum. */
#include <linux/delay.h>
#include <linux/of.h>
#include <linux/phy/phy.h>
#include <linux/platform_device.h>

struct pcix;

struct pcix_pdata {
	int (*power_up)(struct pcix *p);
};

struct pcix {
	struct device *dev;
	struct phy *phy;
	void __iomem *base;
	const struct pcix_pdata *soc;
};

static int pcix_v1_power_up(struct pcix *p)
{
	return phy_init(p->phy);
}

static int pcix_v2_power_up(struct pcix *p)
{
	int err;

	/* expect: busy-wait-in-pm-callback(warning) */
	/* ok: delay-beyond-spec */
	mdelay(100);
	err = phy_init(p->phy);
	if (err) {
		dev_err(p->dev, "failed to initialize PHY\n");
		return err;
	}
	err = phy_power_on(p->phy);
	if (err)
		goto err_phy_on;
	/* expect: busy-wait-in-pm-callback(warning) */
	/* ok: delay-beyond-spec */
	mdelay(100);
	return 0;

err_phy_on:
	phy_exit(p->phy);
	return err;
}

static int pcix_startup(struct pcix *p)
{
	writel(1, p->base);
	/* PERST# held for T_PVPERL */
	/* ok: delay-beyond-spec */
	msleep(100);
	writel(0, p->base);
	return 0;
}

static int pcix_resume_noirq(struct device *dev)
{
	struct pcix *p = dev_get_drvdata(dev);
	int err;

	err = p->soc->power_up(p);
	if (err)
		return err;
	return pcix_startup(p);
}

static const struct dev_pm_ops pcix_pm_ops = {
	NOIRQ_SYSTEM_SLEEP_PM_OPS(NULL, pcix_resume_noirq)
};

static const struct pcix_pdata pcix_v1 = { .power_up = pcix_v1_power_up };
static const struct pcix_pdata pcix_v2 = { .power_up = pcix_v2_power_up };

static const struct of_device_id pcix_of_match[] = {
	{ .compatible = "acme,pcix-v1", .data = &pcix_v1 },
	{ .compatible = "acme,pcix-v2", .data = &pcix_v2 },
	{ }
};

static struct platform_driver pcix_driver = {
	.driver = {
		.name = "pcix",
		.of_match_table = pcix_of_match,
		.pm = pm_sleep_ptr(&pcix_pm_ops),
	},
};
module_platform_driver(pcix_driver);
