// SPDX-License-Identifier: GPL-2.0
/* Legacy PCI bus callbacks (.suspend/.resume in struct pci_driver) are PM callbacks too. */
#include <linux/delay.h>
#include <linux/pci.h>

#define OLD_RESET_SETTLE_S	1

static unsigned long old_next_statechange;

static int old_suspend(struct pci_dev *pdev, pm_message_t state)
{
	pci_save_state(pdev);
	/* expect: msleep-under-20ms(quiet) */
	msleep(5);
	/* waits for a jiffies deadline: only a jiffies-based sleep is sure to pass it */
	if (time_before(jiffies, old_next_statechange))
		/* ok: msleep-under-20ms */
		msleep(5);
	return 0;
}

static int old_resume(struct pci_dev *pdev)
{
	pci_restore_state(pdev);
	/* expect: delay-beyond-spec(quiet) */
	ssleep(OLD_RESET_SETTLE_S);
	return 0;
}

/* Not reached from PM here, but the comment names the spec quantity it pads: a hint while
 * the comment does not admit the margin (the driver may know its devices need more), info
 * when it does. */
static void old_port_connect(struct pci_dev *pdev)
{
	/* debounce: TATTDB is 100 ms */
	/* expect: delay-beyond-spec(quiet) */
	msleep(200);
	/* TATTDB, doubled to be on the safe side */
	/* expect: delay-beyond-spec(quiet) */
	msleep(200);
}

static struct pci_driver old_driver = {
	.name = "old",
	.suspend = old_suspend,
	.resume = old_resume,
};
module_pci_driver(old_driver);
