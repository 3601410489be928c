// SPDX-License-Identifier: GPL-2.0
/*
 * Trimmed from Debian's linux-source-6.12 (6.12.117) drivers/acpi/button.c: an acpi_driver
 * for buttons and lids sets wakeup on the ACPI device object, whose button/lid wakeup the ACPI
 * core owns (scan.c:1026-1033, wakeup.c:94): turning it off at remove would stop the lid
 * waking the system (blind round 2 called the warning wrong). chromeos-tbmc-6.1.c is the
 * ACPI driver whose wakeup is its own to undo.
 */
#include <acpi/button.h>
#include <linux/acpi.h>
#include <linux/module.h>

static const struct acpi_device_id button_device_ids[] = {
	{ACPI_BUTTON_HID_LID,    0},
	{ACPI_BUTTON_HID_SLEEP,  0},
	{ACPI_BUTTON_HID_POWER,  0},
	{"", 0},
};

static int acpi_button_add(struct acpi_device *device)
{
	struct acpi_button *button;
	int error = 0;

	button = kzalloc(sizeof(struct acpi_button), GFP_KERNEL);
	if (!button)
		return -ENOMEM;

	device->driver_data = button;

	error = acpi_button_add_fs(device);
	if (error)
		goto err_free_button;

	/* ok: wakeup-source-not-undone */
	device_init_wakeup(&device->dev, true);
	return 0;

err_free_button:
	kfree(button);
	return error;
}

static void acpi_button_remove(struct acpi_device *device)
{
	struct acpi_button *button = acpi_driver_data(device);

	acpi_button_remove_fs(device);
	kfree(button);
}

static struct acpi_driver acpi_button_driver = {
	.name = "button",
	.ids = button_device_ids,
	.ops = {
		.add = acpi_button_add,
		.remove = acpi_button_remove,
	},
};
module_acpi_driver(acpi_button_driver);
