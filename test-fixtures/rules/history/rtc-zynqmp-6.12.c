// SPDX-License-Identifier: GPL-2.0
/*
 * Trimmed from Debian's linux-source-6.12 (6.12.117) drivers/rtc/rtc-zynqmp.c: the wakeup
 * source is set up right before `return devm_rtc_register_device(...)`, which with its ops
 * set fails only when devres cannot allocate (drivers/rtc/class.c:393-441); remove turns
 * wakeup off. Nothing worth a patch leaks (blind round 4: "debatable").
 */
#include <linux/platform_device.h>
#include <linux/rtc.h>

static int xlnx_rtc_probe(struct platform_device *pdev)
{
	struct xlnx_rtc_dev *xrtcdev;

	xrtcdev = devm_kzalloc(&pdev->dev, sizeof(*xrtcdev), GFP_KERNEL);
	if (!xrtcdev)
		return -ENOMEM;

	platform_set_drvdata(pdev, xrtcdev);

	xrtcdev->rtc = devm_rtc_allocate_device(&pdev->dev);
	if (IS_ERR(xrtcdev->rtc))
		return PTR_ERR(xrtcdev->rtc);

	xrtcdev->rtc->ops = &xlnx_rtc_ops;
	xrtcdev->rtc->range_max = U32_MAX;

	/* ok: wakeup-source-not-undone */
	device_init_wakeup(&pdev->dev, 1);

	return devm_rtc_register_device(xrtcdev->rtc);
}

static void xlnx_rtc_remove(struct platform_device *pdev)
{
	xlnx_rtc_alarm_irq_enable(&pdev->dev, 0);
	device_init_wakeup(&pdev->dev, 0);
}

static struct platform_driver xlnx_rtc_driver = {
	.probe		= xlnx_rtc_probe,
	.remove_new	= xlnx_rtc_remove,
	.driver		= {
		.name	= "xlnx-rtc",
	},
};
module_platform_driver(xlnx_rtc_driver);
