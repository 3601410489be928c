// SPDX-License-Identifier: GPL-2.0
/* msleep-under-20ms: short msleep()s on PM paths, evaluated through defines, locals and
 * struct fields; severity by the worst case at HZ=250 (warning from 2x the request, info
 * from 1.5x, nothing below). */
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
	/* 7 ms: up to 12 ms at HZ=250 (under 2x: a hint) */
	/* expect: msleep-under-20ms(quiet) */
	msleep(wait);
	writel(3, p->regs);
	/* 10 ms: up to 16 ms at HZ=250 */
	/* expect: msleep-under-20ms(quiet) */
	msleep(PANEL_T4_MS);
	/* 15 ms: up to 20 ms at HZ=250, a third more than asked */
	/* ok: msleep-under-20ms */
	msleep(15);
	/* ok: msleep-under-20ms */
	msleep(19);
}

/* The value comes from the caller: 5 ms on resume. */
static void panel_reset(struct panel *p, unsigned int hold_ms)
{
	writel(0, p->regs);
	/* expect: msleep-under-20ms(quiet) */
	msleep(hold_ms);
	writel(1, p->regs);
}

static int panel_resume(struct device *dev)
{
	struct panel *p = dev_get_drvdata(dev);

	panel_reset(p, PANEL_T3_MS);

	/* 8 ms at worst, next to 80 ms of other fixed waits: the rounding does not matter */
	/* expect: msleep-under-20ms(quiet) */
	msleep(1);
	panel_power_on(p);
	/* ok: msleep-under-20ms */
	usleep_range(5000, 6000);
	/* expect: delay-beyond-spec(quiet) */
	msleep(20);
	return 0;
}

static int panel_suspend(struct device *dev)
{
	struct panel *p = dev_get_drvdata(dev);
	int tries = 100;

	while (readl(p->regs) & 1 && --tries)
		/* expect: msleep-under-20ms(quiet) */
		msleep(1);
	/* ok: msleep-under-20ms */
	fsleep(1000);
	return 0;
}

static DEFINE_SIMPLE_DEV_PM_OPS(panel_pm_ops, panel_suspend, panel_resume);

/* Per-variant timings in match data: the largest value counts. */
struct panel_desc {
	unsigned int enable_ms;
	unsigned int settle_ms;
	unsigned int prepare_ms;
};

static const struct panel_desc panel_a = {
	.enable_ms = 2,
	.settle_ms = 3,
	.prepare_ms = 5,
};

static const struct panel_desc panel_b = {
	.enable_ms = 4,
	.settle_ms = 50,
	.prepare_ms = 6,
};

struct panel2 {
	const struct panel_desc *desc;
	unsigned int prepare_ms;
};

static int panel2_probe(struct device *dev, struct panel2 *p)
{
	/* the field is also set at run time: its value is unknown */
	p->prepare_ms = 1;
	return 0;
}

static int panel2_resume(struct device *dev)
{
	struct panel2 *p = dev_get_drvdata(dev);

	/* expect: msleep-under-20ms(quiet) */
	msleep(p->desc->enable_ms);
	/* one variant waits 50 ms: not a short sleep */
	/* ok: msleep-under-20ms */
	/* expect: delay-beyond-spec(quiet) */
	msleep(p->desc->settle_ms);
	/* ok: msleep-under-20ms */
	msleep(p->prepare_ms);
	return 0;
}

static DEFINE_RUNTIME_DEV_PM_OPS(panel2_pm_ops, NULL, panel2_resume, NULL);

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


/* The rounding is most of what this resume waits (msleep(2) sleeps up to 8 ms at HZ=250), but
 * once per system resume: info, the cost stated (rules/tables/severity-policy.yaml). */
static int led_resume(struct device *dev)
{
	struct panel *p = dev_get_drvdata(dev);

	writel(1, p->regs);
	/* expect: msleep-under-20ms(quiet) */
	msleep(2);
	writel(0, p->regs);
	return 0;
}

static DEFINE_SIMPLE_DEV_PM_OPS(led_pm_ops, NULL, led_resume);

/* The caller's enumerator decides the branch: suspend never takes the sleeping one. */
enum chip_wait { CHIP_NO_WAIT = 0, ChipWaitNoSleep, ChipWaitSleep };

static void chip_reset(struct panel *p, int wait_type)
{
	if (wait_type == ChipWaitSleep)
		/* ok: msleep-under-20ms */
		msleep(5);
	else
		udelay(500);
}

static int chip_suspend(struct device *dev)
{
	chip_reset(dev_get_drvdata(dev), ChipWaitNoSleep);
	return 0;
}

static DEFINE_SIMPLE_DEV_PM_OPS(chip_pm_ops, chip_suspend, NULL);

/* A comment that calls the sleep a tuned workaround: its length may matter (a hint, no fix). */
static int tuned_resume(struct device *dev)
{
	struct panel *p = dev_get_drvdata(dev);

	writel(1, p->regs);
	/* Without this msleep the controller keeps generating interrupts */
	/* expect: msleep-under-20ms(quiet) */
	msleep(2);
	return 0;
}

static DEFINE_SIMPLE_DEV_PM_OPS(tuned_pm_ops, NULL, tuned_resume);
