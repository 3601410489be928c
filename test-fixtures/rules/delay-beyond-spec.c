// SPDX-License-Identifier: GPL-2.0
/* delay-beyond-spec: padded spec delays (hub.c shapes) and unexplained waits in PM paths. */
#include <linux/delay.h>
#include <linux/pci.h>
#include <linux/usb.h>

#define HUB_SETTLE_MS		100
#define PHY_POWER_ON_MS		(HUB_SETTLE_MS / 2)
#define USB_QUIRK_HUB_SLOW_RESET	BIT(14)

struct hub {
	unsigned int quirks;
	void __iomem *regs;
};

/* Not a PM callback and reached by none in this file: still reported, the comment names
 * the spec quantity it pads. */
static int hub_port_reset(struct hub *hub)
{
	int reset_recovery_time;

	/* TRSTRCY = 10 ms; plus some extra */
	reset_recovery_time = 10 + 40;

	/* Hub needs extra delay after resetting its port. */
	if (hub->quirks & USB_QUIRK_HUB_SLOW_RESET)
		reset_recovery_time += 100;

	/* expect: delay-beyond-spec(quiet) */
	msleep(reset_recovery_time);
	return 0;
}

static int hub_port_resume(struct hub *hub)
{
	/* drive resume for USB_RESUME_TIMEOUT msec; the padding is documented in usb.h */
	/* expect: delay-beyond-spec(quiet) */
	msleep(USB_RESUME_TIMEOUT);

	/* TRSMRCY = 10 msec */
	/* ok: delay-beyond-spec */
	usleep_range(10000, 11000);
	return 0;
}

static int ctl_resume(struct device *dev)
{
	struct hub *hub = dev_get_drvdata(dev);

	/* power rails need to settle, just in case */
	/* expect: delay-beyond-spec(quiet) */
	msleep(10 + 40);

	/* let the PHY settle: a physical need, not an admission of padding */
	/* expect: delay-beyond-spec(quiet) */
	msleep(30);

	/* expect: delay-beyond-spec(quiet) */
	msleep(PHY_POWER_ON_MS);
	writel(1, hub->regs);
	/* ok: delay-beyond-spec */
	usleep_range(50, 100);
	return hub_port_resume(hub);
}

static int ctl_suspend(struct device *dev)
{
	return 0;
}

static DEFINE_SIMPLE_DEV_PM_OPS(ctl_pm_ops, ctl_suspend, ctl_resume);

/* PCI error recovery is not power management. */
static void ctl_io_resume(struct pci_dev *pdev)
{
	/* let the link settle */
	/* ok: delay-beyond-spec */
	msleep(200);
}

static const struct pci_error_handlers ctl_err_handler = {
	.resume = ctl_io_resume,
};

static struct pci_driver ctl_driver = {
	.name = "ctl",
	.err_handler = &ctl_err_handler,
	.driver.pm = &ctl_pm_ops,
};
module_pci_driver(ctl_driver);

static int mon_resume(struct device *dev)
{
	/* the monitor needs 100 ms to leave sleep; add 10 ms extra as margin */
	/* expect: delay-beyond-spec(quiet) */
	msleep(110);
	return 0;
}

static int mon_suspend(struct device *dev)
{
	return 0;
}

static DEFINE_SIMPLE_DEV_PM_OPS(mon_pm_ops, mon_suspend, mon_resume);
