// SPDX-License-Identifier: GPL-2.0
/*
 * Trimmed from Debian's linux-source-6.1 (6.1.192) drivers/usb/host/ohci-at91.c: remove
 * turns wakeup off (:612), but a loop macro written without braces (`at91_for_each_port(i)`)
 * makes the parser lose the whole function; a remove the model does not have makes no "at
 * unbind" claim (blind round 3: the claim was false). The probe failure half stands.
 */
#include <linux/platform_device.h>
#include <linux/usb/hcd.h>

#define AT91_MAX_USBH_PORTS	3
#define at91_for_each_port(index)	\
		for ((index) = 0; (index) < AT91_MAX_USBH_PORTS; (index)++)

static int ohci_hcd_at91_drv_probe(struct platform_device *pdev)
{
	struct at91_usbh_data	*pdata;

	pdata = devm_kzalloc(&pdev->dev, sizeof(*pdata), GFP_KERNEL);
	if (!pdata)
		return -ENOMEM;
	pdev->dev.platform_data = pdata;

	/* expect: wakeup-source-not-undone(warning) */
	device_init_wakeup(&pdev->dev, 1);
	return usb_hcd_at91_probe(&ohci_at91_hc_driver, pdev);
}

static int ohci_hcd_at91_drv_remove(struct platform_device *pdev)
{
	struct at91_usbh_data	*pdata = dev_get_platdata(&pdev->dev);
	int			i;

	if (pdata) {
		at91_for_each_port(i)
			ohci_at91_usb_set_power(pdata, i, 0);
	}

	device_init_wakeup(&pdev->dev, 0);
	usb_hcd_at91_remove(platform_get_drvdata(pdev), pdev);
	return 0;
}

static struct platform_driver ohci_hcd_at91_driver = {
	.probe		= ohci_hcd_at91_drv_probe,
	.remove		= ohci_hcd_at91_drv_remove,
	.driver		= {
		.name	= "at91_ohci",
	},
};
module_platform_driver(ohci_hcd_at91_driver);
