/* service: the stock participant described for the participant kit
 * (services/kit/pkit.h): its tables, its pure decision, its saga commands
 * (ReserveStock, the step; ReleaseStock, the compensation) and its admin
 * methods. The kit does the rest. */
#ifndef SAGA_STOCK_SERVICE_H
#define SAGA_STOCK_SERVICE_H

#include "pkit.h"
#include "stock_logic.h"

extern const pkit_service stock_service;

/* stock_args_of puts `cmd` (its sku borrowed) in the kit's terms. */
void stock_args_of(const stock_cmd *cmd, pkit_args *a);

/* stock_outcome_of puts the kit's outcome `o` in the service's terms. */
void stock_outcome_of(const pkit_outcome *o, stock_outcome *out);

#endif
