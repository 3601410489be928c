// SPDX-License-Identifier: GPL-2.0
/*
 * Trimmed from Debian's linux-source-6.1 (6.1.192) drivers/platform/chrome/chromeos_tbmc.c:
 * a modular ACPI driver with no .remove registers a wakeup source that unloading the module
 * leaves behind. linux-source-6.12 adds chromeos_tbmc_remove() with
 * device_init_wakeup(&adev->dev, false) (fixes-6.1-6.12.tsv).
 */
#include <linux/acpi.h>
#include <linux/input.h>
#include <linux/module.h>

static int chromeos_tbmc_add(struct acpi_device *adev)
{
	struct input_dev *idev;
	struct device *dev = &adev->dev;
	int ret;

	idev = devm_input_allocate_device(dev);
	if (!idev)
		return -ENOMEM;

	input_set_drvdata(idev, adev);
	adev->driver_data = idev;

	input_set_capability(idev, EV_SW, SW_TABLET_MODE);
	ret = input_register_device(idev);
	if (ret) {
		dev_err(dev, "cannot register input device\n");
		return ret;
	}
	/* expect: wakeup-source-not-undone(warning) */
	device_init_wakeup(dev, true);
	return 0;
}

static struct acpi_driver chromeos_tbmc_driver = {
	.name = DRV_NAME,
	.class = DRV_NAME,
	.ids = chromeos_tbmc_acpi_device_ids,
	.ops = {
		.add = chromeos_tbmc_add,
		.notify = chromeos_tbmc_notify,
	},
	.drv.pm = &chromeos_tbmc_pm_ops,
};

module_acpi_driver(chromeos_tbmc_driver);
