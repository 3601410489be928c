// SPDX-License-Identifier: GPL-2.0
/*
 * Trimmed from Debian's linux-source-6.12 (6.12.117) drivers/clk/ti/clk-dra7-atl.c: a
 * built-in driver with suppress_bind_attrs and no remove. Its error paths leave runtime PM
 * enabled, but nothing ever unbinds it and a failure other than -EPROBE_DEFER is never
 * retried (drivers/base/dd.c): blind rounds 1 and 2 found such warnings debatable. Quiet.
 */
#include <linux/clk-provider.h>
#include <linux/platform_device.h>
#include <linux/pm_runtime.h>

static int of_dra7_atl_clk_probe(struct platform_device *pdev)
{
	struct device_node *node = pdev->dev.of_node;
	struct dra7_atl_clock_info *cinfo;
	int i;
	int ret = 0;

	if (!node)
		return -ENODEV;

	cinfo = devm_kzalloc(&pdev->dev, sizeof(*cinfo), GFP_KERNEL);
	if (!cinfo)
		return -ENOMEM;

	cinfo->iobase = of_iomap(node, 0);
	cinfo->dev = &pdev->dev;
	/* expect: runtime-pm-enable-not-undone(quiet) */
	pm_runtime_enable(cinfo->dev);

	pm_runtime_get_sync(cinfo->dev);
	atl_write(cinfo, DRA7_ATL_PCLKMUX_REG(0), DRA7_ATL_PCLKMUX);

	for (i = 0; i < DRA7_ATL_INSTANCES; i++) {
		struct of_phandle_args clkspec;
		struct clk *clk;
		int rc;

		rc = of_parse_phandle_with_args(node, "ti,provided-clocks",
						NULL, i, &clkspec);

		if (rc) {
			pr_err("%s: failed to lookup atl clock %d\n", __func__,
			       i);
			ret = -EINVAL;
			goto pm_put;
		}

		clk = of_clk_get_from_provider(&clkspec);
		of_node_put(clkspec.np);
		if (IS_ERR(clk)) {
			ret = PTR_ERR(clk);
			goto pm_put;
		}
	}

pm_put:
	pm_runtime_put_sync(cinfo->dev);
	return ret;
}

static struct platform_driver dra7_atl_clk_driver = {
	.driver = {
		.name = "dra7-atl",
		.suppress_bind_attrs = true,
		.of_match_table = of_dra7_atl_clk_match_tbl,
	},
	.probe = of_dra7_atl_clk_probe,
};
builtin_platform_driver(dra7_atl_clk_driver);
