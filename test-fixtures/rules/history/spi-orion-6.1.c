// SPDX-License-Identifier: GPL-2.0
/*
 * Trimmed from Debian's linux-source-6.1 (6.1.192) drivers/spi/spi-orion.c, orion_spi_probe()
 * and orion_spi_remove(): remove takes a usage count and disables runtime PM without dropping
 * the count or turning autosuspend off. linux-source-6.12's orion_spi_remove() adds
 * pm_runtime_put_noidle() and pm_runtime_dont_use_autosuspend() (fixes-6.1-6.12.tsv).
 */
#include <linux/platform_device.h>
#include <linux/pm_runtime.h>
#include <linux/spi/spi.h>

static int orion_spi_probe(struct platform_device *pdev)
{
	struct spi_master *master;
	struct orion_spi *spi;
	int status = 0;

	master = spi_alloc_master(&pdev->dev, sizeof(*spi));
	if (master == NULL)
		return -ENOMEM;
	spi = spi_master_get_devdata(master);

	status = clk_prepare_enable(spi->clk);
	if (status)
		goto out;

	pm_runtime_set_active(&pdev->dev);
	/* expect: runtime-pm-autosuspend-not-undone(warning) */
	pm_runtime_use_autosuspend(&pdev->dev);
	pm_runtime_set_autosuspend_delay(&pdev->dev, SPI_AUTOSUSPEND_TIMEOUT);
	/* ok: runtime-pm-usage-unbalanced-in-probe */
	pm_runtime_get_noresume(&pdev->dev);
	/* ok: runtime-pm-enable-not-undone */
	pm_runtime_enable(&pdev->dev);

	status = orion_spi_reset(spi);
	if (status < 0)
		goto out_rel_pm;

	master->dev.of_node = pdev->dev.of_node;
	status = spi_register_master(master);
	if (status < 0)
		goto out_rel_pm;

	pm_runtime_put_autosuspend(&pdev->dev);

	return status;

out_rel_pm:
	pm_runtime_disable(&pdev->dev);
	pm_runtime_put_noidle(&pdev->dev);
	pm_runtime_set_suspended(&pdev->dev);
	pm_runtime_dont_use_autosuspend(&pdev->dev);
	clk_disable_unprepare(spi->clk);
out:
	spi_master_put(master);
	return status;
}

static int orion_spi_remove(struct platform_device *pdev)
{
	struct spi_master *master = platform_get_drvdata(pdev);
	struct orion_spi *spi = spi_master_get_devdata(master);

	/* expect: runtime-pm-usage-unbalanced-in-probe(warning) */
	pm_runtime_get_sync(&pdev->dev);
	clk_disable_unprepare(spi->axi_clk);
	clk_disable_unprepare(spi->clk);

	spi_unregister_master(master);
	pm_runtime_disable(&pdev->dev);

	return 0;
}

static struct platform_driver orion_spi_driver = {
	.driver = {
		.name	= DRIVER_NAME,
		.pm	= &orion_spi_pm_ops,
		.of_match_table = of_match_ptr(orion_spi_of_match_table),
	},
	.probe		= orion_spi_probe,
	.remove		= orion_spi_remove,
};

module_platform_driver(orion_spi_driver);
