"""Result JSON -> PCCs, per-phase fits, predictions, comparisons, reports. Never boots vLLM."""
