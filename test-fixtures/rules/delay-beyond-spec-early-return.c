// SPDX-License-Identifier: GPL-2.0
/* delay-beyond-spec: the waits of a per-socket power-up come after an early `return 0` for
 * an empty socket (r8, tifm_7xx1.c:94-108): a counted loop over the sockets pays them only
 * for occupied ones, so they are no count per resume (a quiet hint, the condition named),
 * not "20 ms per iteration on every resume". */
#include <linux/delay.h>
#include <linux/io.h>
#include <linux/pci.h>

#define SOCK_OCCUPIED	0x01
#define SOCK_POWERED	0x08

struct sockhost {
	void __iomem *regs;
	int nr;
};

static int sockhost_power_sock(void __iomem *sock)
{
	unsigned int sock_state = readl(sock + 0x08);

	if (!(sock_state & SOCK_OCCUPIED))
		return 0;

	writel(sock_state | 0x0c00, sock + 0x04);
	/* let the supply settle */
	/* expect: delay-beyond-spec(quiet) */
	msleep(20);
	return readl(sock + 0x08) & SOCK_POWERED;
}

static int sockhost_resume(struct device *dev)
{
	struct sockhost *fm = dev_get_drvdata(dev);
	int i;

	for (i = 0; i < fm->nr; i++)
		sockhost_power_sock(fm->regs + 0x400 * (i + 1));
	return 0;
}

static int sockhost_suspend(struct device *dev)
{
	return 0;
}

static DEFINE_SIMPLE_DEV_PM_OPS(sockhost_pm_ops, sockhost_suspend, sockhost_resume);

static struct pci_driver sockhost_driver = {
	.name = "sockhost",
	.driver.pm = pm_sleep_ptr(&sockhost_pm_ops),
};
module_pci_driver(sockhost_driver);
