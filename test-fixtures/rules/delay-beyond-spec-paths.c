// SPDX-License-Identifier: GPL-2.0
/* delay-beyond-spec: the callback's total is its worst single path. Branches that exclude
 * each other count once (the longest), an `if` without `else` (a quirk, an error path) is
 * named as conditional, and delays in loops are no fixed total. The totals themselves are
 * checked in server/tests/test_rules_delay_paths.py. */
#include <linux/delay.h>
#include <linux/platform_device.h>

#define BAZ_QUIRK_SLOW_WAKE	BIT(0)

struct baz {
	unsigned int quirks;
	int model;
	bool fast;
	void __iomem *regs;
};

static void baz_power_up(struct baz *baz)
{
	writel(1, baz->regs);
	/* expect: delay-beyond-spec(quiet) */
	msleep(40);
}

static int baz_resume(struct device *dev)
{
	struct baz *baz = dev_get_drvdata(dev);
	int ret, i;

	if (baz->fast)
		/* expect: delay-beyond-spec(quiet) */
		msleep(100);
	else
		/* expect: delay-beyond-spec(quiet) */
		msleep(200);

	switch (baz->model) {
	case 1:
		/* expect: delay-beyond-spec(quiet) */
		msleep(50);
		break;
	default:
		/* expect: delay-beyond-spec(quiet) */
		msleep(80);
		break;
	}

	baz_power_up(baz);

	/* Device-specific waits behind a quirk are what the rule recommends, and an error
	 * path is no cost of a normal resume: not reported themselves, named in the total. */
	if (baz->quirks & BAZ_QUIRK_SLOW_WAKE)
		/* ok: delay-beyond-spec */
		msleep(1500);

	ret = readl(baz->regs);
	if (ret) {
		/* ok: delay-beyond-spec */
		msleep(1000);
		return ret;
	}

	/* A device variant's normal way out is no error path. */
	if (baz->model == 7) {
		/* expect: delay-beyond-spec(quiet) */
		msleep(250);
		return 0;
	}

	/* Only one chip revision pays this margin: a hint (a cost some devices pay). */
	if (baz->model == 3)
		/* expect: delay-beyond-spec(quiet) */
		msleep(40); /* plenty of margin */

	/* A quirk's wait is the remedy the rule recommends, whatever its comment says. */
	if (baz->quirks & BAZ_QUIRK_SLOW_WAKE)
		/* ok: delay-beyond-spec */
		msleep(300); /* wait extra time, unclear why */

	/* A plain conditional wait is reported and named as such. */
	if (ret == 2)
		/* expect: delay-beyond-spec(quiet) */
		msleep(60);

	/* a counted loop pays its wait on every iteration (issue 31); 30 ms once per resume */
	for (i = 0; i < 3; i++)
		/* expect: delay-beyond-spec(quiet) */
		msleep(30);
	return 0;
}

static int baz_suspend(struct device *dev)
{
	return 0;
}

static DEFINE_SIMPLE_DEV_PM_OPS(baz_pm_ops, baz_suspend, baz_resume);
