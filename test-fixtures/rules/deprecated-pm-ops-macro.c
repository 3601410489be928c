// SPDX-License-Identifier: GPL-2.0
/* deprecated-pm-ops-macro: SIMPLE_DEV_PM_OPS with __maybe_unused callbacks. */
#include <linux/platform_device.h>

static int __maybe_unused led_suspend(struct device *dev)
{
	return 0;
}

static int __maybe_unused led_resume(struct device *dev)
{
	return 0;
}

/* expect: deprecated-pm-ops-macro */
static SIMPLE_DEV_PM_OPS(led_pm_ops, led_suspend, led_resume);

static struct platform_driver led_driver = {
	.driver = {
		.name = "led",
		.pm = &led_pm_ops,
	},
};
module_platform_driver(led_driver);

/* Callbacks exported by another file (built there under #ifdef CONFIG_PM_SLEEP): converting
 * this table alone would break !CONFIG_PM_SLEEP builds, so it is left to that file. */
/* ok: deprecated-pm-ops-macro */
static SIMPLE_DEV_PM_OPS(shared_pm_ops, rtl_pci_suspend, rtl_pci_resume);
