// SPDX-License-Identifier: MIT
pragma solidity ^0.8.24;

import {ERC20} from "@openzeppelin/contracts/token/ERC20/ERC20.sol";

/// @notice A token for the tests only: its deployer mints what a test needs.
contract TestToken is ERC20 {
    address private immutable _minter;

    error NotMinter();

    constructor() ERC20("Test Season Token", "TST") {
        _minter = msg.sender;
    }

    function mint(address to, uint256 amount) external {
        if (msg.sender != _minter) revert NotMinter();
        _mint(to, amount);
    }
}
