// SPDX-License-Identifier: GPL-2.0
/* busy-wait-in-pm-callback: mdelay() of 10 ms or more where sleeping is allowed. */
#include <linux/delay.h>
#include <linux/platform_device.h>
#include <linux/spinlock.h>

#define PLL_LOCK_MS	15

struct pll {
	spinlock_t lock;
	void __iomem *regs;
};

static int pll_resume_noirq(struct device *dev)
{
	struct pll *pll = dev_get_drvdata(dev);

	writel(1, pll->regs);
	/* expect: busy-wait-in-pm-callback */
	mdelay(PLL_LOCK_MS);
	return 0;
}

static int pll_suspend_noirq(struct device *dev)
{
	struct pll *pll = dev_get_drvdata(dev);
	unsigned long flags;

	spin_lock_irqsave(&pll->lock, flags);
	writel(0, pll->regs);
	/* ok: busy-wait-in-pm-callback */
	mdelay(10);
	spin_unlock_irqrestore(&pll->lock, flags);
	/* ok: busy-wait-in-pm-callback */
	mdelay(2);
	/* expect: busy-wait-in-pm-callback */
	udelay(12000);
	return 0;
}

static const struct dev_pm_ops pll_pm_ops = {
	NOIRQ_SYSTEM_SLEEP_PM_OPS(pll_suspend_noirq, pll_resume_noirq)
};

static struct platform_driver pll_driver = {
	.driver = {
		.name = "pll",
		.pm = pm_sleep_ptr(&pll_pm_ops),
	},
};
module_platform_driver(pll_driver);
