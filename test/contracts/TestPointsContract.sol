// SPDX-License-Identifier: MIT
pragma solidity ^0.8.24;

interface IBlastPoints {
    function configurePointsOperator(address operator) external;
}

/// @notice A dapp contract for the tests only: it names its operator in its constructor, as Blast's docs ask.
contract TestPointsContract {
    constructor(address registry, address operator) {
        IBlastPoints(registry).configurePointsOperator(operator);
    }

    /// @notice A second call from the contract itself, which the registry must refuse.
    function configureAgain(address registry, address operator) external {
        IBlastPoints(registry).configurePointsOperator(operator);
    }
}
