// SPDX-License-Identifier: GPL-2.0
/* The delay sites of test-fixtures/traces/timeline/test_mem_ftrace.txt (a made-up hub). */
#include <linux/delay.h>
#include <linux/usb.h>

#define HUB_RESET_MS 10

static int usb_port_suspend(struct usb_device *udev)
{
	msleep(10);
	return 0;
}

static int usb_port_resume(struct usb_device *udev)
{
	if (udev->speed == USB_SPEED_SUPER)
		msleep(20);
	/* resume recovery time (TRSMRCY); this hub needs more than the spec's 10 ms */
	msleep(40);
	return 0;
}

static void hub_port_reset(struct usb_device *udev)
{
	usleep_range(HUB_RESET_MS * 1000, HUB_RESET_MS * 2000);
}
