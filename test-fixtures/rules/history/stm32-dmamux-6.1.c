// SPDX-License-Identifier: GPL-2.0
/*
 * Trimmed from Debian's linux-source-6.1 (6.1.192) drivers/dma/stm32-dmamux.c: probe takes a
 * usage count at :247 and another at :286, and drops one at :292 (the second's: the latest
 * count taken before it). The first is kept on the success path for the driver's life, so its
 * error paths leak nothing the success path does not keep too (blind round 5: "wrong").
 */
#include <linux/clk.h>
#include <linux/platform_device.h>
#include <linux/pm_runtime.h>

static int stm32_dmamux_probe(struct platform_device *pdev)
{
	struct stm32_dmamux_data *stm32_dmamux;
	void __iomem *iomem;
	int i, ret;

	stm32_dmamux = devm_kzalloc(&pdev->dev, sizeof(*stm32_dmamux), GFP_KERNEL);
	if (!stm32_dmamux)
		return -ENOMEM;

	/* ok: runtime-pm-usage-unbalanced-in-probe */
	pm_runtime_get_noresume(&pdev->dev);

	iomem = devm_platform_ioremap_resource(pdev, 0);
	if (IS_ERR(iomem))
		return PTR_ERR(iomem);

	stm32_dmamux->clk = devm_clk_get(&pdev->dev, NULL);
	if (IS_ERR(stm32_dmamux->clk))
		return dev_err_probe(&pdev->dev, PTR_ERR(stm32_dmamux->clk),
				     "Missing clock controller\n");

	ret = clk_prepare_enable(stm32_dmamux->clk);
	if (ret < 0)
		return ret;

	stm32_dmamux->iomem = iomem;
	platform_set_drvdata(pdev, stm32_dmamux);
	pm_runtime_set_active(&pdev->dev);
	pm_runtime_enable(&pdev->dev);

	pm_runtime_get_noresume(&pdev->dev);

	for (i = 0; i < stm32_dmamux->dma_requests; i++)
		writel_relaxed(0, stm32_dmamux->iomem + 4 * i);

	pm_runtime_put(&pdev->dev);

	ret = of_dma_router_register(pdev->dev.of_node, stm32_dmamux_route_allocate,
				     &stm32_dmamux->dmarouter);
	if (ret)
		goto pm_disable;

	return 0;

pm_disable:
	pm_runtime_disable(&pdev->dev);
	clk_disable_unprepare(stm32_dmamux->clk);
	return ret;
}

static struct platform_driver stm32_dmamux_driver = {
	.probe	= stm32_dmamux_probe,
	.driver = {
		.name = "stm32-dmamux",
	},
};

static int __init stm32_dmamux_init(void)
{
	return platform_driver_register(&stm32_dmamux_driver);
}
arch_initcall(stm32_dmamux_init);
