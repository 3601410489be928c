// SPDX-License-Identifier: GPL-2.0
/* delay-beyond-spec: PCIe host controllers wait 100 ms around PERST# (T_PVPERL before it is
 * released, PCIe r6.0 6.6.1 after it): at the spec minimum they are never reported; a delay
 * kept in match data is followed to its initializers. */
#include <linux/delay.h>
#include <linux/platform_device.h>
#include "../../pci.h"

struct foo_pcie_of_data {
	unsigned int perst_delay_ms;
	unsigned int link_delay_ms;
	unsigned int phy_delay_ms;
};

static const struct foo_pcie_of_data foo_pcie_v1 = {
	.perst_delay_ms = 100,
	.link_delay_ms = 100,	/* after PERST# deassertion */
	.phy_delay_ms = 100,
};

static const struct foo_pcie_of_data foo_pcie_v2 = {
	.perst_delay_ms = 100,
	.link_delay_ms = 150,	/* after PERST#, plus some margin for slow endpoints */
	.phy_delay_ms = 300,
};

struct foo_pcie {
	const struct foo_pcie_of_data *data;
	struct gpio_desc *reset_gpio;
	unsigned int phy_delay_ms;
};

/* A copy of the match data's value is no other value. */
static void foo_pcie_init(struct foo_pcie *pcie, const struct foo_pcie_of_data *data)
{
	pcie->phy_delay_ms = data->phy_delay_ms;
}

static void foo_pcie_perst(struct foo_pcie *pcie)
{
	gpiod_set_value(pcie->reset_gpio, 1);
	/* ok: delay-beyond-spec */
	msleep(PCIE_T_PVPERL_MS);
	gpiod_set_value(pcie->reset_gpio, 0);
	/* wait 100 ms after PERST# de-assertion before the first config request */
	/* ok: delay-beyond-spec */
	msleep(100);
	/* ok: delay-beyond-spec */
	msleep(PCIE_T_RRS_READY_MS);
}

static void foo_pcie_slot_power(struct foo_pcie *pcie, bool slot)
{
	/*
	 * PCIe CEM r1.1, Table 2-4: T_PVPERL (power stable to PERST# inactive) is at
	 * least 100 ms.
	 */
	if (slot)
		/* ok: delay-beyond-spec */
		msleep(100);
	/* Ensure that PERST has been asserted for at least 100 ms */
	/* ok: delay-beyond-spec */
	msleep(100);
	gpiod_set_value(pcie->reset_gpio, 0);
	/* let the link come up after PERST */
	/* expect: delay-beyond-spec(quiet) */
	msleep(200);
}

static int foo_pcie_resume_noirq(struct device *dev)
{
	struct foo_pcie *pcie = dev_get_drvdata(dev);

	foo_pcie_perst(pcie);
	foo_pcie_slot_power(pcie, true);
	/* T_PVPERL */
	/* ok: delay-beyond-spec */
	msleep(pcie->data->perst_delay_ms);
	/* expect: delay-beyond-spec(quiet) */
	msleep(pcie->data->link_delay_ms);
	/* expect: delay-beyond-spec(quiet) */
	msleep(pcie->data->phy_delay_ms);
	/* expect: delay-beyond-spec(quiet) */
	msleep(pcie->phy_delay_ms);
	return 0;
}

static int foo_pcie_suspend_noirq(struct device *dev)
{
	return 0;
}

static const struct dev_pm_ops foo_pcie_pm_ops = {
	NOIRQ_SYSTEM_SLEEP_PM_OPS(foo_pcie_suspend_noirq, foo_pcie_resume_noirq)
};

static const struct of_device_id foo_pcie_of_match[] = {
	{ .compatible = "foo,pcie-v1", .data = &foo_pcie_v1 },
	{ .compatible = "foo,pcie-v2", .data = &foo_pcie_v2 },
	{},
};

static struct platform_driver foo_pcie_driver = {
	.driver = {
		.name = "foo-pcie",
		.of_match_table = foo_pcie_of_match,
		.pm = &foo_pcie_pm_ops,
	},
};
module_platform_driver(foo_pcie_driver);
