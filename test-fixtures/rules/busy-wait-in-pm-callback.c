// SPDX-License-Identifier: GPL-2.0
/* busy-wait-in-pm-callback: mdelay() of 10 ms or more where sleeping is allowed. */
#include <linux/delay.h>
#include <linux/platform_device.h>
#include <linux/spinlock.h>

#define PLL_LOCK_MS	15

struct pll {
	spinlock_t lock;
	struct timer_list timer;
	bool in_suspend;
	void __iomem *regs;
	struct net_device *ndev;
};

static void pll_full_lock(struct pll *pll)
{
	spin_lock_bh(&pll->lock);
}

static void pll_full_unlock(struct pll *pll)
{
	spin_unlock_bh(&pll->lock);
}

static void pll_halt(struct pll *pll)
{
	writel(2, pll->regs);
	/* ok: busy-wait-in-pm-callback */
	mdelay(12);
}

static int pll_resume_early(struct device *dev)
{
	struct pll *pll = dev_get_drvdata(dev);

	pll_full_lock(pll);
	pll_halt(pll);
	pll_full_unlock(pll);
	return 0;
}

/* Shared with a caller that holds the lock: mdelay() is the only option here. */
static void pll_port_power(struct pll *pll, int on)
{
	writel(on, pll->regs);
	/* ok: busy-wait-in-pm-callback */
	mdelay(15);
}

static void pll_hub_control(struct pll *pll)
{
	unsigned long flags;

	spin_lock_irqsave(&pll->lock, flags);
	pll_port_power(pll, 1);
	spin_unlock_irqrestore(&pll->lock, flags);
}

/* Also shared with a timer callback, which runs in softirq context. */
static void pll_reinit(struct pll *pll)
{
	writel(3, pll->regs);
	/* ok: busy-wait-in-pm-callback */
	mdelay(18);
}

static void pll_watchdog(struct timer_list *t)
{
	struct pll *pll = from_timer(pll, t, timer);

	pll_reinit(pll);
}

/* Only reached from the netdev watchdog (atomic) besides suspend. */
static void pll_hw_reset(struct pll *pll)
{
	/* ok: busy-wait-in-pm-callback */
	mdelay(11);
}

static void pll_tx_timeout(struct net_device *ndev, unsigned int txqueue)
{
	pll_hw_reset(netdev_priv(ndev));
}

static const struct net_device_ops pll_netdev_ops = {
	.ndo_tx_timeout = pll_tx_timeout,
};

static int pll_suspend_late(struct device *dev)
{
	struct pll *pll = dev_get_drvdata(dev);

	pll_port_power(pll, 0);
	timer_setup(&pll->timer, pll_watchdog, 0);
	pll_reinit(pll);
	pll_hw_reset(pll);
	return 0;
}

/* Called once per iteration of a polling loop: advisory, as a loop's own mdelay() is. */
static void pll_settle_step(struct pll *pll)
{
	writel(4, pll->regs);
	/* expect: busy-wait-in-pm-callback(quiet) */
	mdelay(10);
}

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
	while (readl(pll->regs) & 1)
		/* expect: busy-wait-in-pm-callback(quiet) */
		mdelay(10);
	/* expect: busy-wait-in-pm-callback */
	udelay(12000);
	while (readl(pll->regs) & 2)
		pll_settle_step(pll);
	return 0;
}

static const struct dev_pm_ops pll_pm_ops = {
	NOIRQ_SYSTEM_SLEEP_PM_OPS(pll_suspend_noirq, pll_resume_noirq)
	LATE_SYSTEM_SLEEP_PM_OPS(pll_suspend_late, pll_resume_early)
};

static struct platform_driver pll_driver = {
	.driver = {
		.name = "pll",
		.pm = pm_sleep_ptr(&pll_pm_ops),
	},
};
module_platform_driver(pll_driver);

/* The driver picks the primitive by context (sm501, dm9000): not a finding either way. */
static void pll_wait(struct pll *pll, unsigned int ms)
{
	if (pll->in_suspend)
		/* ok: busy-wait-in-pm-callback */
		mdelay(ms);
	else
		/* ok: msleep-under-20ms */
		msleep(ms);
}

static int pll2_suspend(struct device *dev)
{
	struct pll *pll = dev_get_drvdata(dev);

	pll->in_suspend = true;
	pll_wait(pll, 10);
	return 0;
}

static int pll2_resume(struct device *dev)
{
	struct pll *pll = dev_get_drvdata(dev);

	/* the netdev TX lock and the RCU read side forbid sleeping too */
	netif_tx_lock_bh(pll->ndev);
	/* ok: busy-wait-in-pm-callback */
	mdelay(12);
	netif_tx_unlock_bh(pll->ndev);
	rcu_read_lock();
	/* ok: busy-wait-in-pm-callback */
	mdelay(12);
	rcu_read_unlock();
	/* expect: busy-wait-in-pm-callback */
	mdelay(12);
	return 0;
}

static DEFINE_SIMPLE_DEV_PM_OPS(pll2_pm_ops, pll2_suspend, pll2_resume);

/* Only after a rare event flagged by the interrupt handler (a firmware reset): info. */
static int nic_resume(struct device *dev)
{
	struct pll *pll = dev_get_drvdata(dev);

	if (test_and_clear_bit(0, &pll->reset_flags))
		/* expect: busy-wait-in-pm-callback(info) */
		/* ok: delay-beyond-spec */
		mdelay(100);
	return 0;
}

static DEFINE_SIMPLE_DEV_PM_OPS(nic_pm_ops, NULL, nic_resume);
