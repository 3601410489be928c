// SPDX-License-Identifier: GPL-2.0
/* async-suspend-not-enabled: a device other drivers call into is no async candidate without
 * device links (issue 20): here a backlight driver calls lcdx_set_backlight() in its own
 * resume and writes to this SPI device, which is not its parent. */
#include <linux/delay.h>
#include <linux/spi/spi.h>

struct lcdx {
	struct spi_device *spi;
};

int lcdx_set_backlight(struct spi_device *spi, int level)
{
	u8 buf[2] = { 0x51, level };

	return spi_write(spi, buf, sizeof(buf));
}
EXPORT_SYMBOL_GPL(lcdx_set_backlight);

static int lcdx_probe(struct spi_device *spi)
{
	return 0;
}

static int lcdx_resume(struct device *dev)
{
	struct lcdx *l = dev_get_drvdata(dev);
	u8 on = 0x11;

	spi_write(l->spi, &on, 1);
	/* the panel needs 120 ms after sleep-out before it takes a command */
	msleep(120);
	return 0;
}

static int lcdx_suspend(struct device *dev)
{
	return 0;
}

static DEFINE_SIMPLE_DEV_PM_OPS(lcdx_pm_ops, lcdx_suspend, lcdx_resume);

/* ok: async-suspend-not-enabled */
static struct spi_driver lcdx_driver = {
	.probe = lcdx_probe,
	.driver = {
		.name = "lcdx",
		.pm = pm_sleep_ptr(&lcdx_pm_ops),
	},
};
module_spi_driver(lcdx_driver);
