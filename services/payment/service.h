/* service: the payment participant described for the participant kit
 * (services/kit/pkit.h): its tables, its pure decision, its saga commands
 * (ChargePayment, the pivot; RefundPayment, the compensation) and its admin
 * methods. The kit does the rest. */
#ifndef SAGA_PAYMENT_SERVICE_H
#define SAGA_PAYMENT_SERVICE_H

#include "payment_logic.h"
#include "pkit.h"

extern const pkit_service payment_service;

/* payment_args_of puts `cmd` (its customer borrowed) in the kit's terms. */
void payment_args_of(const payment_cmd *cmd, pkit_args *a);

/* payment_outcome_of puts the kit's outcome `o` in the service's terms. */
void payment_outcome_of(const pkit_outcome *o, payment_outcome *out);

#endif
