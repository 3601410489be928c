// SPDX-License-Identifier: GPL-2.0
#include <linux/module.h>
#include <linux/platform_device.h>
#include "drv.h"

static int hdr_suspend(struct device *dev)
{
	msleep(DRV_DELAY_MS);
	return 0;
}

static DEFINE_SIMPLE_DEV_PM_OPS(hdr_pm, hdr_suspend, NULL);

static struct platform_driver hdr_driver = {
	.driver = {
		.name = DRV_NAME,
		.pm = pm_sleep_ptr(&hdr_pm),
	},
};
module_platform_driver(hdr_driver);
