// SPDX-License-Identifier: GPL-2.0
/*
 * Trimmed from Debian's linux-source-6.1 (6.1.192) drivers/gpu/drm/msm/dsi/phy/dsi_phy.c:
 * probe takes a usage count (and the AHB clock) in dsi_phy_enable_resource() and gives both
 * back with dsi_phy_disable_resource() on its success path; the dev_err_probe() returns in
 * between do not. The fix names that undo helper (blind round 2: a bare put would leave the
 * clock enabled).
 */
#include <linux/clk.h>
#include <linux/platform_device.h>
#include <linux/pm_runtime.h>

static int dsi_phy_enable_resource(struct msm_dsi_phy *phy)
{
	struct device *dev = &phy->pdev->dev;
	int ret;

	/* expect: runtime-pm-usage-unbalanced-in-probe(warning) */
	ret = pm_runtime_resume_and_get(dev);
	if (ret)
		return ret;

	ret = clk_prepare_enable(phy->ahb_clk);
	if (ret) {
		DRM_DEV_ERROR(dev, "%s: can't enable ahb clk, %d\n", __func__, ret);
		pm_runtime_put_sync(dev);
	}

	return ret;
}

static void dsi_phy_disable_resource(struct msm_dsi_phy *phy)
{
	clk_disable_unprepare(phy->ahb_clk);
	pm_runtime_put(&phy->pdev->dev);
}

static int dsi_phy_driver_probe(struct platform_device *pdev)
{
	struct msm_dsi_phy *phy;
	struct device *dev = &pdev->dev;
	int ret;

	phy = devm_kzalloc(dev, sizeof(*phy), GFP_KERNEL);
	if (!phy)
		return -ENOMEM;
	phy->pdev = pdev;

	ret = devm_pm_runtime_enable(&pdev->dev);
	if (ret)
		return ret;

	/* PLL init will call into clk_register which requires
	 * register access, so we need to enable power and ahb clock.
	 */
	ret = dsi_phy_enable_resource(phy);
	if (ret)
		return ret;

	if (phy->cfg->ops.pll_init) {
		ret = phy->cfg->ops.pll_init(phy);
		if (ret)
			return dev_err_probe(dev, ret,
					     "PLL init failed; need separate clk driver\n");
	}

	ret = devm_of_clk_add_hw_provider(dev, of_clk_hw_onecell_get,
				     phy->provided_clocks);
	if (ret)
		return dev_err_probe(dev, ret,
				     "Failed to register clk provider\n");

	dsi_phy_disable_resource(phy);

	platform_set_drvdata(pdev, phy);

	return 0;
}

static struct platform_driver dsi_phy_platform_driver = {
	.probe      = dsi_phy_driver_probe,
	.driver     = {
		.name   = "msm_dsi_phy",
		.of_match_table = dsi_phy_dt_match,
	},
};

void __init msm_dsi_phy_driver_register(void)
{
	platform_driver_register(&dsi_phy_platform_driver);
}
