// SPDX-License-Identifier: GPL-2.0
/* busy-wait-in-pm-callback: what the message says of a polling loop follows its shape (issue
 * 20): a loop that reads the device first may not wait at all; one that waits first always
 * does. */
#include <linux/delay.h>
#include <linux/platform_device.h>

struct fan {
	void __iomem *base;
};

/* reads first: a first read that succeeds waits not at all */
static int fan_poll_ready(struct fan *fan, int timeout)
{
	int waited = 0;

	do {
		if (readl(fan->base) & 1)
			return waited;
		/* expect: busy-wait-in-pm-callback */
		mdelay(10);
		waited += 10;
	} while (waited < timeout);
	return -ETIMEDOUT;
}

/* waits first: the first look at the device comes after a full mdelay() */
static int fan_wait_reset(struct fan *fan)
{
	int tries = 100;

	do {
		/* expect: busy-wait-in-pm-callback */
		mdelay(10);
	} while ((readl(fan->base + 4) & 2) && --tries);
	return tries ? 0 : -ETIMEDOUT;
}

/* a counted for loop that waits before it reads */
static void fan_settle(struct fan *fan)
{
	int i;

	for (i = 0; i < 5; i++) {
		/* expect: busy-wait-in-pm-callback */
		mdelay(12);
		if (readl(fan->base + 8))
			break;
	}
}

static int fan_resume(struct device *dev)
{
	struct fan *fan = dev_get_drvdata(dev);

	writel(1, fan->base + 4);
	if (fan_wait_reset(fan))
		return -EIO;
	fan_settle(fan);
	return fan_poll_ready(fan, 100) < 0 ? -EIO : 0;
}

static int fan_suspend(struct device *dev)
{
	return 0;
}

static DEFINE_SIMPLE_DEV_PM_OPS(fan_pm_ops, fan_suspend, fan_resume);

static struct platform_driver fan_driver = {
	.driver = {
		.name = "fan",
		.pm = pm_sleep_ptr(&fan_pm_ops),
	},
};
module_platform_driver(fan_driver);
