// SPDX-License-Identifier: GPL-2.0
/* The delay sites of test-fixtures/traces/sleepgraph_fgraph_ftrace.txt (a made-up hub). */
#include <linux/delay.h>
#include <linux/usb.h>

static void hub_port_reset(struct usb_device *udev)
{
	/* reset recovery time (TRSTRCY) */
	msleep(50);
	udelay(20);
}

static int usb_port_resume(struct usb_device *udev)
{
	hub_port_reset(udev);
	/* resume recovery time (TRSMRCY) */
	msleep(10);
	return 0;
}
