%% savina_philosopher: Savina's dining philosophers with an arbitrator. Philosopher i sends
%% {hungry, I, self()} to the arbitrator, which answers `eat` when forks i and (i+1) rem N
%% are both free (and takes them; the forks are the bits of an integer) or `denied`, after
%% which the philosopher asks again at once. After eating it sends {done, I} (the forks are
%% freed) and, until it ate M times, is hungry again; then it sends {exit, Meals}. The
%% arbitrator counts the grants and the denials and, once all N exited, sends them and the
%% meals the philosophers counted to the driver. Check: N*M meals (counted on both sides);
%% the denials are reported as the extra `denials`.
-module(peer_savina_philosopher).
-export([run/1]).

philosopher(I, M, Arb) ->
    receive go -> ok end,
    Arb ! {hungry, I, self()},
    philosopher(I, 0, M, Arb).

philosopher(I, Meals, M, Arb) ->
    receive
        denied ->
            Arb ! {hungry, I, self()},
            philosopher(I, Meals, M, Arb);
        eat when Meals + 1 =:= M ->
            Arb ! {done, I},
            Arb ! {exit, M};
        eat ->
            Arb ! {done, I},
            Arb ! {hungry, I, self()},
            philosopher(I, Meals + 1, M, Arb)
    end.

%% Forks: bit f set when fork f is taken.
%% Counts the grants, the meals the philosophers reported and the denials.
arbitrator(_, 0, _, Grants, Meals, Denials, Driver) ->
    Driver ! {arbitrator_done, Grants, Meals, Denials};
arbitrator(N, Left, Forks, Grants, Meals, Denials, Driver) ->
    receive
        {hungry, I, From} ->
            Pair = (1 bsl I) bor (1 bsl ((I + 1) rem N)),
            case Forks band Pair of
                0 ->
                    From ! eat,
                    arbitrator(N, Left, Forks bor Pair, Grants + 1, Meals, Denials, Driver);
                _ ->
                    From ! denied,
                    arbitrator(N, Left, Forks, Grants, Meals, Denials + 1, Driver)
            end;
        {done, I} ->
            Pair = (1 bsl I) bor (1 bsl ((I + 1) rem N)),
            arbitrator(N, Left, Forks band (bnot Pair), Grants, Meals, Denials, Driver);
        {exit, Ate} ->
            arbitrator(N, Left - 1, Forks, Grants, Meals + Ate, Denials, Driver)
    end.

run(#{philosophers := N, rounds := M}) ->
    Self = self(),
    Arb = spawn(fun() -> arbitrator(N, N, 0, 0, 0, 0, Self) end),
    Phils = [spawn(fun() -> philosopher(I, M, Arb) end) || I <- lists:seq(0, N - 1)],
    T0 = peer_savina:now_ns(),
    [P ! go || P <- Phils],
    {Grants, Meals, Denials} = receive {arbitrator_done, G, Ms, Ds} -> {G, Ms, Ds} end,
    Secs = peer_savina:secs_since(T0),
    {Grants, Meals} =:= {N * M, N * M} orelse
        peer_savina:fail("savina_philosopher: ~p meals granted, ~p eaten, expected ~p",
                         [Grants, Meals, N * M]),
    {Secs, [{denials, Denials}]}.
