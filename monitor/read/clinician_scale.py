"""The clinician-scale figures for the dashboard's pages (computed in ``medmon.monitor.governance.clinician_scale``,
which the committee report shares)."""

from medmon.monitor.governance.clinician_scale import ClinicianScale, clinician_scale

__all__ = ["ClinicianScale", "clinician_scale"]
