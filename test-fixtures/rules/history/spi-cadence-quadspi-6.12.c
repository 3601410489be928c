// SPDX-License-Identifier: GPL-2.0
/*
 * Trimmed from Debian's linux-source-6.12 (6.12.117) drivers/spi/spi-cadence-quadspi.c: the
 * count taken by pm_runtime_get_noresume() is not dropped when spi_register_controller()
 * fails, but probe_setup_failed: is also reached from before the get, and the ladder below it
 * takes a count of its own with pm_runtime_get_sync(): the message says both (blind round 2
 * found the bare "add a put on the error path" debatable). 7.2 reorders the ladder, adds
 * pm_runtime_put_noidle() and pm_runtime_dont_use_autosuspend() and drops that get
 * (fixes-6.12-7.2.tsv).
 */
#include <linux/module.h>
#include <linux/platform_device.h>
#include <linux/pm_runtime.h>

static int cqspi_probe(struct platform_device *pdev)
{
	struct device *dev = &pdev->dev;
	struct spi_controller *host;
	struct cqspi_st *cqspi;
	int ret;

	host = devm_spi_alloc_host(&pdev->dev, sizeof(*cqspi));
	if (!host)
		return -ENOMEM;
	cqspi = spi_controller_get_devdata(host);

	ret = clk_prepare_enable(cqspi->clk);
	if (ret) {
		dev_err(dev, "Cannot enable QSPI clock.\n");
		goto probe_clk_failed;
	}

	ret = cqspi_setup_flash(cqspi);
	if (ret) {
		dev_err(dev, "failed to setup flash parameters %d\n", ret);
		goto probe_setup_failed;
	}

	if (cqspi->use_direct_mode) {
		ret = cqspi_request_mmap_dma(cqspi);
		if (ret == -EPROBE_DEFER)
			goto probe_setup_failed;
	}

	pm_runtime_enable(dev);

	pm_runtime_set_autosuspend_delay(dev, CQSPI_AUTOSUSPEND_TIMEOUT);
	/* expect: runtime-pm-autosuspend-not-undone(warning) */
	pm_runtime_use_autosuspend(dev);
	/* expect: runtime-pm-usage-unbalanced-in-probe(warning) */
	pm_runtime_get_noresume(dev);

	ret = spi_register_controller(host);
	if (ret) {
		dev_err(&pdev->dev, "failed to register SPI ctlr %d\n", ret);
		goto probe_setup_failed;
	}

	pm_runtime_mark_last_busy(dev);
	pm_runtime_put_autosuspend(dev);

	return 0;
probe_setup_failed:
	cqspi_controller_enable(cqspi, 0);
	pm_runtime_disable(dev);
	if (pm_runtime_get_sync(&pdev->dev) >= 0)
		clk_disable_unprepare(cqspi->clk);
probe_clk_failed:
	return ret;
}

static void cqspi_remove(struct platform_device *pdev)
{
	struct cqspi_st *cqspi = platform_get_drvdata(pdev);

	spi_unregister_controller(cqspi->host);

	if (pm_runtime_get_sync(&pdev->dev) >= 0) {
		cqspi_controller_enable(cqspi, 0);
		clk_disable(cqspi->clk);
	}

	pm_runtime_put_sync(&pdev->dev);
	pm_runtime_disable(&pdev->dev);
}

static struct platform_driver cqspi_platform_driver = {
	.probe = cqspi_probe,
	.remove_new = cqspi_remove,
	.driver = {
		.name = CQSPI_NAME,
	},
};

module_platform_driver(cqspi_platform_driver);
