// SPDX-License-Identifier: GPL-2.0
/* msleep-under-20ms: short msleep()s on PM paths, evaluated through defines and locals. */
#include <linux/delay.h>
#include <linux/i2c.h>

#define PANEL_T3_MS	5
#define PANEL_T4_MS	(PANEL_T3_MS * 2)

struct panel {
	void __iomem *regs;
};

static void panel_power_on(struct panel *p)
{
	unsigned int wait = PANEL_T3_MS + 2;

	writel(1, p->regs);
	/* expect: msleep-under-20ms */
	msleep(wait);
	writel(3, p->regs);
	/* expect: msleep-under-20ms */
	msleep(PANEL_T4_MS);
}

/* The value comes from the caller: 5 ms on resume. */
static void panel_reset(struct panel *p, unsigned int hold_ms)
{
	writel(0, p->regs);
	/* expect: msleep-under-20ms */
	msleep(hold_ms);
	writel(1, p->regs);
}

static int panel_resume(struct device *dev)
{
	struct panel *p = dev_get_drvdata(dev);

	panel_reset(p, PANEL_T3_MS);

	/* expect: msleep-under-20ms */
	msleep(1);
	panel_power_on(p);
	/* ok: msleep-under-20ms */
	usleep_range(5000, 6000);
	/* expect: delay-beyond-spec(info) */
	msleep(20);
	return 0;
}

static int panel_suspend(struct device *dev)
{
	struct panel *p = dev_get_drvdata(dev);
	int tries = 100;

	while (readl(p->regs) & 1 && --tries)
		/* expect: msleep-under-20ms(info) */
		msleep(1);
	/* ok: msleep-under-20ms */
	fsleep(1000);
	return 0;
}

static DEFINE_SIMPLE_DEV_PM_OPS(panel_pm_ops, panel_suspend, panel_resume);

/* Not on a PM path: checkpatch's business, not ours. */
static int panel_probe(struct i2c_client *client)
{
	/* ok: msleep-under-20ms */
	msleep(2);
	return 0;
}

static struct i2c_driver panel_driver = {
	.probe = panel_probe,
	.driver = {
		.name = "panel",
		.pm = pm_sleep_ptr(&panel_pm_ops),
	},
};
module_i2c_driver(panel_driver);
