"""What a C file means for power management: functions, calls, dev_pm_ops tables, drivers."""
