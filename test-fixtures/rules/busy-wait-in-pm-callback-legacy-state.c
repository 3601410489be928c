// SPDX-License-Identifier: GPL-2.0
/* A legacy platform .suspend/.resume pair (called for suspend/freeze/poweroff and
 * resume/thaw/restore) whose suspend stores the message it got; after a system suspend the
 * resume only wakes the root hub ports and returns (r8, isp1362-hcd.c:2741-2751): the waits
 * of the bus resume run on thaw/restore only, and the messages say so. */
#include <linux/delay.h>
#include <linux/platform_device.h>

struct oldhc {
	void __iomem *regs;
};

static int oldhc_bus_resume(struct oldhc *hc)
{
	writel(1, hc->regs);
	/* expect: busy-wait-in-pm-callback */
	mdelay(35);
	writel(2, hc->regs);
	/* expect: msleep-under-20ms(quiet) */
	msleep(10);
	return 0;
}

static int oldhc_suspend(struct platform_device *pdev, pm_message_t state)
{
	struct oldhc *hc = platform_get_drvdata(pdev);

	if (state.event == PM_EVENT_FREEZE)
		writel(0, hc->regs);
	else
		writel(4, hc->regs);
	pdev->dev.power.power_state = state;
	return 0;
}

static int oldhc_resume(struct platform_device *pdev)
{
	struct oldhc *hc = platform_get_drvdata(pdev);

	if (pdev->dev.power.power_state.event == PM_EVENT_SUSPEND) {
		writel(8, hc->regs);
		return 0;
	}
	pdev->dev.power.power_state = PMSG_ON;
	return oldhc_bus_resume(hc);
}

static struct platform_driver oldhc_driver = {
	.suspend = oldhc_suspend,
	.resume = oldhc_resume,
	.driver = {
		.name = "oldhc",
	},
};
module_platform_driver(oldhc_driver);
